"""Interop: time to the first text event over AG-UI against Heddle's own SSE, for the same run.

A local fake OpenAI-compatible model (bench/streaming.py's `FakeModel`, in this process) streams
each reply (`--first-token-ms` to its first word, then a word every `--chunk-ms`); `heddle serve`
runs in a subprocess (SQLite). Runs alternate between the two ways in, on one thread each:

- Heddle's own: `POST /v1/loom/threads/{id}/messages`, then `GET /v1/loom/runs/{id}/events`
  (SSE) until the first `message.delta`;
- AG-UI: `POST /v1/agui/{agent_id}` (RunAgentInput) until the first `TEXT_MESSAGE_CONTENT`.

Two figures per way: from sending the first request to the first text event (what a user
waits), and from the model's first token (time.time() in the fake) to that event (what Heddle
adds). Same machine, same clock. The ratio AG-UI / own of the medians is the result (goal: within
10%); absolute figures depend on the machine's load, which is printed.

    python bench/interop.py [--runs 30] [--first-token-ms 300] [--chunk-ms 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, cli, summary  # noqa: E402

from streaming import FakeModel  # noqa: E402


def own_first_delta(http: httpx.Client, thread: str, headers: dict, prompt: str) -> float:
    """Time (time.time()) the first `message.delta` arrives; the clock starts before the POST."""
    run_id = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": prompt},
                       headers=headers).json()["data"]["run_id"]
    first = None
    event = None
    with http.stream("GET", f"/v1/loom/runs/{run_id}/events", headers=headers) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "message.delta" and first is None:
                first = time.time()
            elif line.startswith("data: ") and event == "run.updated" and json.loads(line[6:])["terminal"]:
                break
    assert first is not None
    return first


def agui_first_delta(http: httpx.Client, agent: str, headers: dict, prompt: str) -> float:
    body = {"threadId": "bench-agui", "runId": uuid.uuid4().hex, "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": prompt}]}
    first = None
    with http.stream("POST", f"/v1/agui/{agent}", json=body, headers=headers) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            kind = json.loads(line[6:])["type"]
            if kind == "TEXT_MESSAGE_CONTENT" and first is None:
                first = time.time()
            elif kind in ("RUN_FINISHED", "RUN_ERROR"):
                break
    assert first is not None
    return first


def run(runs: int, first_token_ms: float, chunk_ms: float) -> dict:
    with FakeModel(first_token_ms, chunk_ms) as fake:
        classes = {"fake": {"provider": "openai", "model": "fake", "base_url": f"http://127.0.0.1:{fake.port}/v1",
                            "api_key": "k", "max_retries": 0}}
        os.environ["HEDDLE_MODEL_CLASSES"] = json.dumps(classes)  # the CLI checks the agent's class too
        with Server(HEDDLE_MODEL_CLASSES=json.dumps(classes)) as server:
            ws_id, secret = server.tenant()
            agent_file = Path(server.dir.name) / "agent.yaml"
            agent_file.write_text("name: interop\nmodel_class: fake\ninstructions: ''\ntools: []\n")
            agent = cli(server.db_url, "agent", "create", "--workspace", ws_id, "--file", str(agent_file))["id"]
            own_h = {"Authorization": f"Bearer {secret}", "Service-Subject": "bench:own"}
            agui_h = {"Authorization": f"Bearer {secret}", "Service-Subject": "bench:agui"}
            samples: dict[str, dict[str, list[float]]] = {w: {"request": [], "model": []} for w in ("own", "agui")}
            with httpx.Client(base_url=server.base_url, timeout=30) as http:
                thread = http.post("/v1/loom/threads", json={"agent": agent}, headers=own_h).json()["data"]["id"]
                for i in range(runs * 2):
                    way = ("own", "agui")[i % 2]
                    prompt = f"bench {way} {i}"
                    sent = time.time()
                    if way == "own":
                        arrived = own_first_delta(http, thread, own_h, prompt)
                    else:
                        arrived = agui_first_delta(http, agent, agui_h, prompt)
                    samples[way]["request"].append((arrived - sent) * 1000)
                    samples[way]["model"].append((arrived - fake.first_token[prompt]) * 1000)
    out = {"benchmark": "interop", "runs_each": runs, "first_token_ms": first_token_ms, "chunk_ms": chunk_ms,
           "load_average": os.getloadavg()}
    for way in ("own", "agui"):
        out[way] = {"from_request": summary(samples[way]["request"]),
                    "after_model_first_token": summary(samples[way]["model"])}
    for figure in ("from_request", "after_model_first_token"):
        own, agui = out["own"][figure]["median_ms"], out["agui"][figure]["median_ms"]
        out[f"ratio_{figure}"] = round(agui / own, 3) if own else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--first-token-ms", type=float, default=300)
    parser.add_argument("--chunk-ms", type=float, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.runs, args.first_token_ms, args.chunk_ms)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"interop: {args.runs} runs each way, model first token {args.first_token_ms:g} ms, "
          f"load average {result['load_average'][0]:.2f}")
    for way, name in (("own", "Heddle SSE (POST + GET events)"), ("agui", "AG-UI (POST /v1/agui)")):
        r, m = result[way]["from_request"], result[way]["after_model_first_token"]
        print(f"  {name:34s} from request: median {r['median_ms']:8.1f} ms p99 {r['p99_ms']:8.1f} ms | "
              f"after the model's first token: median {m['median_ms']:6.1f} ms p99 {m['p99_ms']:6.1f} ms")
    print(f"  AG-UI / own, medians: from request {result['ratio_from_request']}, "
          f"after first token {result['ratio_after_model_first_token']}")


if __name__ == "__main__":
    main()
