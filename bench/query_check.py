"""What refusing unknown query parameters costs per request (issue 30): the same FastAPI route
bare, with `heddle.api.operations.refuse_unknown_query` called in the handler (as
authentication calls it), and with it as a FastAPI dependency of its own (the first design,
kept here as the baseline that shows why it moved), called in-process through the ASGI
interface (no socket, no database), interleaved, best of 7 rounds. Reported for a request
without a query string (the common case: the check returns at once) and with a declared one
(`?limit=5`: the route's declared names are looked up, then compared).

    python bench/query_check.py [--requests 2000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from fastapi import Depends, FastAPI, Query, Request

from heddle.api.operations import refuse_unknown_query


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/bare")
    async def bare(limit: int = Query(20)) -> dict:
        return {"limit": limit}

    @app.get("/inline")
    async def inline(request: Request, limit: int = Query(20)) -> dict:
        refuse_unknown_query(request)
        return {"limit": limit}

    async def as_dependency(request: Request) -> None:
        refuse_unknown_query(request)

    @app.get("/dependency", dependencies=[Depends(as_dependency)])
    async def dependency(limit: int = Query(20)) -> dict:
        return {"limit": limit}

    return app


async def _call(app: FastAPI, path: str, query: bytes) -> None:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "", "headers": [],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    assert sent[0]["status"] == 200, sent


PATHS = ("/bare", "/inline", "/dependency")


async def bench(requests: int) -> list[dict]:
    app = _app()
    results = []
    for label, query in (("no query string", b""), ("?limit=5", b"limit=5")):
        best = {path: float("inf") for path in PATHS}
        for _ in range(7):
            for path in PATHS:
                started = time.perf_counter()
                for _ in range(requests):
                    await _call(app, path, query)
                best[path] = min(best[path], (time.perf_counter() - started) / requests * 1e6)
        bare = best["/bare"]
        results.append({"request": label, "bare_us": round(bare, 1),
                        "inline_us": round(best["/inline"], 1), "inline_ratio": round(best["/inline"] / bare, 3),
                        "dependency_us": round(best["/dependency"], 1),
                        "dependency_ratio": round(best["/dependency"] / bare, 3)})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(bench(args.requests))
    if args.json:
        print(json.dumps({"results": results}))
        return
    for r in results:
        print(f"{r['request']:>16}: bare {r['bare_us']:6.1f} us   inline {r['inline_us']:6.1f} us "
              f"(x{r['inline_ratio']:.3f})  dependency {r['dependency_us']:6.1f} us (x{r['dependency_ratio']:.3f})")


if __name__ == "__main__":
    main()
