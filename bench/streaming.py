"""Streaming: first tokens under load (the default), and first-delta latency (`--latency`).

The load table (issue 48): llmock as the model (300 ms to the first chunk, then a 150-piece
reply at about 50 chunks/s); N conversations (10, 100, 300) each posting messages one after
another for `--duration` seconds and reading every delta (Heddle over SSE); each round on fresh
servers, systems interleaved round by round. Systems (bench/streaming_systems.py): the openai
SDK straight to llmock (the physical limit; `raw`, httpx without the SDK's typed chunks, is
the nearer one where the SDK's parsing lags the client), Heddle embedded (SQLite), Heddle
PostgreSQL 1 API + 1 worker, LangGraph's in-memory server (ChatOpenAI on the same llmock,
messages-tuple). Every server gets 400 run slots. Columns: time to the first delta (from
sending the message) median and p95, its overhead over direct (median), runs/s, server CPU per run and per chunk (every
process of the system, PostgreSQL's backends included), `/healthz` answer time during the
round (median / p95), this client's own loop lag (p95), failed runs (with the run's error).
The load average is printed: figures compare within a run.

Arrivals (`--arrivals`): `together` (the default, the issue's table) sends every conversation's
first message the moment the round opens; the replies then take the same time, so the
conversations stay in step and every reply's length all N messages arrive in the same instant.
`spread` sends the k-th conversation's first message k/N of a reply's length (first token +
pieces x chunk interval) after the opening, so that messages arrive evenly, as N users who did
not press Send together would. The first measures a burst of N at once, the second N steady
conversations (docs/operations.md, "Part twelve").

    python bench/streaming.py [--systems direct,raw,embedded,postgres,langgraph] [--levels 10,100,300]
                              [--rounds 3] [--duration 20] [--arrivals together|spread] [--json]
    python bench/streaming.py --systems embedded,direct --levels 100 --rounds 1 --duration 8   # ~1 min

`--latency` measures what this bench measured first: a local fake OpenAI-compatible model
(in this process) streams each reply; `heddle serve` runs in a subprocess with the built-in
realtime server. For each of `--messages` runs (one thread, one after the other):
- pusher-js (tests/realtime/js, the official client) subscribed to the thread's channel
  notes when the first `message.delta` of the run arrives (Date.now());
- an SSE client (httpx, its own thread) on `GET /v1/loom/runs/{id}/events` notes when the first
  `message.delta` event arrives.
Latency = arrival time minus the fake's first-token time: same machine, same clock.

    python bench/streaming.py --latency [--messages 30] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, cli, free_port, summary  # noqa: E402
from streaming_load import add_load_arguments, load_table  # noqa: E402

KEY, SECRET = "bench-key", "bench-secret-" + uuid.uuid4().hex
JS = Path(__file__).parents[1] / "tests" / "realtime" / "js"
WORDS = 12


class FakeModel:
    """Streams `WORDS` words per reply; `first_token[<user text>]` = time.time() of the first."""

    def __init__(self, first_token_ms: float, chunk_ms: float):
        self.first_token: dict[str, float] = {}
        self.port = free_port()

        async def completions(request: Request):
            body = await request.json()
            prompt = body["messages"][-1]["content"]

            async def chunks():
                base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": body["model"]}

                def chunk(delta, finish=None, **extra):
                    choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else []
                    return f"data: {json.dumps({**base, 'choices': choices, **extra})}\n\n"

                yield chunk({"role": "assistant", "content": ""})
                await asyncio.sleep(first_token_ms / 1000)
                for n in range(WORDS):
                    if n == 0:
                        self.first_token[prompt] = time.time()
                    else:
                        await asyncio.sleep(chunk_ms / 1000)
                    yield chunk({"content": f" word{n}" if n else "word0"})
                yield chunk({}, "stop")
                yield chunk(None, usage={"prompt_tokens": 3, "completion_tokens": WORDS, "total_tokens": WORDS + 3})
                yield "data: [DONE]\n\n"

            return StreamingResponse(chunks(), media_type="text/event-stream")

        app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(5)


def first_sse_delta(base_url: str, run_id: str, headers: dict, out: dict, ready: threading.Event) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as http, \
            http.stream("GET", f"/v1/loom/runs/{run_id}/events", headers=headers) as response:
        ready.set()
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "message.delta" and run_id not in out:
                out[run_id] = time.time()
            elif line.startswith("data: ") and event == "run.updated" and json.loads(line[6:])["terminal"]:
                return


def run(messages: int, first_token_ms: float, chunk_ms: float) -> dict:
    if not shutil.which("node"):
        raise SystemExit("node is needed for the pusher-js client")
    if not (JS / "node_modules" / "pusher-js").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=JS, check=True,
                       stdout=subprocess.DEVNULL)
    with FakeModel(first_token_ms, chunk_ms) as fake:
        classes = {"fake": {"provider": "openai", "model": "fake", "base_url": f"http://127.0.0.1:{fake.port}/v1",
                            "api_key": "k", "max_retries": 0}}
        os.environ["HEDDLE_MODEL_CLASSES"] = json.dumps(classes)  # the CLI checks the agent's class too
        with Server(HEDDLE_PUSHER_KEY=KEY, HEDDLE_PUSHER_SECRET=SECRET,
                    HEDDLE_MODEL_CLASSES=json.dumps(classes)) as server:
            ws_id, secret = server.tenant()
            agent_file = Path(server.dir.name) / "agent.yaml"
            agent_file.write_text("name: st\nmodel_class: fake\ninstructions: ''\ntools: []\n")
            agent = cli(server.db_url, "agent", "create", "--workspace", ws_id, "--file", str(agent_file))["id"]
            h = {"Authorization": f"Bearer {secret}", "Service-Subject": "bench:st"}
            with httpx.Client(base_url=server.base_url, timeout=30) as http:
                thread = http.post("/v1/loom/threads", json={"agent": agent}, headers=h).json()["data"]["id"]
                node = subprocess.Popen(["node", str(JS / "subscribe.mjs"), json.dumps({
                    "key": KEY, "wsHost": "127.0.0.1", "wsPort": server.port,
                    "authEndpoint": f"{server.base_url}/v1/loom/realtime/auth", "token": secret,
                    "headers": {"Service-Subject": "bench:st"}, "channels": [f"private-thread-{thread}"],
                    "events": 10**6, "timeoutMs": 600_000})], stdout=subprocess.PIPE, text=True)
                lines: queue.Queue = queue.Queue()
                threading.Thread(target=lambda: [lines.put(json.loads(ln)) for ln in node.stdout], daemon=True).start()
                while lines.get(timeout=30)["type"] != "subscribed":
                    pass
                pusher_first: dict[str, float] = {}
                sse_first: dict[str, float] = {}
                prompts: dict[str, str] = {}
                for i in range(messages):
                    prompt = f"bench {i}"
                    run_id = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": prompt},
                                       headers=h).json()["data"]["run_id"]
                    prompts[run_id] = prompt
                    ready = threading.Event()
                    reader = threading.Thread(target=first_sse_delta,
                                              args=(server.base_url, run_id, h, sse_first, ready), daemon=True)
                    reader.start()
                    ready.wait(10)
                    reader.join(30)
                    deadline = time.monotonic() + 10
                    while run_id not in pusher_first and time.monotonic() < deadline:
                        try:
                            item = lines.get(timeout=0.5)
                        except queue.Empty:
                            continue
                        if item["type"] == "event" and item["event"] == "message.delta":
                            pusher_first.setdefault(item["data"]["run_id"], item["t"] / 1000)
                node.kill()
    first = fake.first_token
    pusher = [(pusher_first[r] - first[p]) * 1000 for r, p in prompts.items() if r in pusher_first and p in first]
    sse = [(sse_first[r] - first[p]) * 1000 for r, p in prompts.items() if r in sse_first and p in first]
    return {"benchmark": "streaming", "runs": messages, "first_token_ms": first_token_ms, "chunk_ms": chunk_ms,
            "pusher_js": {"client": "pusher-js", **summary(pusher)},
            "sse": {"client": "httpx SSE", **summary(sse)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", action="store_true", help="first-delta latency of one thread (no load)")
    parser.add_argument("--messages", type=int, default=30)
    parser.add_argument("--first-token-ms", type=float, default=300.0)
    parser.add_argument("--chunk-ms", type=float, default=20.0)
    parser.add_argument("--json", action="store_true")
    add_load_arguments(parser)
    args = parser.parse_args()
    if not args.latency:
        load_table(args)
        return
    result = run(args.messages, args.first_token_ms, args.chunk_ms)
    if args.json:
        print(json.dumps(result))
        return
    for name in ("pusher_js", "sse"):
        r = result[name]
        print(f"first token -> first delta at {r['client']}: median {r.get('median_ms')} ms, "
              f"p99 {r.get('p99_ms')} ms over {r['n']} runs")


if __name__ == "__main__":
    main()
