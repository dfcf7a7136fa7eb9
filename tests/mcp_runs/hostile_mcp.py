"""Hostile MCP servers on loopback (issue 40): Streamable HTTP spoken by hand, so that each can
misbehave exactly as the issue's reproductions did, against Heddle's real client (the official
SDK's, through the guarded outbound client).

One `HostileMcpServer` serves every behaviour; `mode` picks one per test:

* ``paged``: `tools/list` returns `per_page` tools a page, each with a padded schema, and a
  `nextCursor` for `pages` pages (the memory attack);
* ``endless``: a `nextCursor` on every page, forever;
* ``resume_loop``: every request is answered with one SSE event (`id`, `retry: 0`) and the
  stream closes, the GET that resumes it too (the resumption loop);
* ``call_loop``: lists `echo`, and answers its `tools/call` with the resumption loop;
* ``names``: lists `ask_user`, an empty name, a 300-character one, names with a space, with
  markup and with a NUL, and one good tool `echo`;
* ``db_down``: GET answers 405 (allowed by the spec) and `tools/list` a JSON-RPC error
  -32000 "backend database down".

The server counts what it was asked (`counts`) and never checks Heddle's signature: a hostile
server does not need to.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).parents[1] / "outbound"))

from outbound_testkit import ServerThread  # noqa: E402

SESSION = "hostile-session"
BAD_NAMES = ["ask_user", "", "x" * 300, "has space", "<script>alert(1)</script>", "nul\x00name"]


def tool(name: str, pad: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}}
    if pad:
        schema["description"] = "p" * pad
    return {"name": name, "description": f"The tool {name}.", "inputSchema": schema}


class HostileMcpServer(ServerThread):
    def __init__(self, host: str = "127.0.0.3", *, mode: str = "paged", per_page: int = 1600, pages: int = 50,
                 pad: int = 400):
        self.mode, self.per_page, self.pages, self.pad = mode, per_page, pages, pad
        self.counts: Counter[str] = Counter()
        app = Starlette(routes=[Route("/mcp", self._handle, methods=["GET", "POST", "DELETE"]),
                                Route("/mint", _mint, methods=["POST"]),
                                Route("/counts", lambda _: JSONResponse(dict(self.counts)))])
        super().__init__(app, host=host)
        self.url = f"{self.url}/mcp"

    async def _handle(self, request: Request) -> Response:
        if request.method == "DELETE":
            return Response(status_code=200)
        if request.method == "GET":
            resumed = request.headers.get("last-event-id")
            self.counts["resume" if resumed else "get"] += 1
            if self.mode in ("resume_loop", "call_loop") and resumed:
                return _one_event(int(resumed) + 1)
            return Response(status_code=405)
        message = json.loads(await request.body())
        method = message.get("method")
        self.counts[method or "?"] += 1
        if "id" not in message:  # a notification
            return Response(status_code=202)
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1"}}
            return _json(message["id"], result)
        if self.mode == "resume_loop" or (self.mode == "call_loop" and method == "tools/call"):
            return _one_event(1)
        if method == "tools/list":
            return self._list(message)
        if method == "tools/call":
            return _json(message["id"], {"content": [{"type": "text", "text": "done"}], "isError": False})
        return _json(message["id"], error={"code": -32601, "message": "no such method"})

    def _list(self, message: dict[str, Any]) -> Response:
        if self.mode == "db_down":
            return _json(message["id"], error={"code": -32000, "message": "backend database down"})
        if self.mode == "call_loop":
            return _json(message["id"], {"tools": [tool("echo")]})
        if self.mode == "names":
            return _json(message["id"], {"tools": [tool(n) for n in BAD_NAMES] + [tool("echo")]})
        page = int((message.get("params") or {}).get("cursor") or 0)
        tools = [tool(f"t{page}_{i}", self.pad) for i in range(self.per_page)]
        more = self.mode == "endless" or page + 1 < self.pages
        return _json(message["id"], {"tools": tools, **({"nextCursor": str(page + 1)} if more else {})})


async def _mint(request: Request) -> JSONResponse:
    """A mint that gives any subject a token (the hostile server never checks it): for the bench,
    whose attacker runs in relay mode."""
    return JSONResponse({"token": "hostile-token", "expires_in": 300})


def _json(id_: Any, result: Any = None, error: Any = None) -> JSONResponse:
    body = {"jsonrpc": "2.0", "id": id_, **({"error": error} if error is not None else {"result": result})}
    return JSONResponse(body, headers={"mcp-session-id": SESSION})


def _one_event(event_id: int) -> StreamingResponse:
    """One priming event (an id, `retry: 0`, no data), then the stream closes without an answer."""

    async def body():
        yield f"id: {event_id}\nretry: 0\ndata: \n\n".encode()

    return StreamingResponse(body(), media_type="text/event-stream", headers={"mcp-session-id": SESSION})


if __name__ == "__main__":  # bench/abuse_mcp.py runs the server in a process of its own
    import argparse
    import threading

    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="paged")
    parser.add_argument("--host", default="127.0.0.3")
    parser.add_argument("--per-page", type=int, default=1600)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--pad", type=int, default=400)
    args = parser.parse_args()
    server = HostileMcpServer(args.host, mode=args.mode, per_page=args.per_page, pages=args.pages, pad=args.pad)
    with server:
        print(server.url, flush=True)
        threading.Event().wait()
