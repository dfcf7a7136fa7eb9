"""What safe retries and rate limits cost per request, as ratios (timings on a shared machine
are noisy; the ratios of interleaved samples are what to compare).

- Identify and thread creation without a key, with a fresh `Idempotency-Key` each time (the
  key's row is written in the request's transaction), and replayed (the same key again).
- `GET /v1/workspace` and Identify with the rate limiter off, and on with memory storage (rules
  high enough never to refuse), and with Redis storage when 127.0.0.1:6379 answers.

One `heddle serve` per limiter setting (SQLite), one keep-alive connection (h11), requests
interleaved across the variants.

    python bench/safe_retries.py [--n 300] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import uuid
from pathlib import Path
from time import perf_counter

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, WireClient, summary  # noqa: E402

HIGH = "1000000/second"
IDENTIFY = {"identifier": "DEUTDEFF"}


async def _timed(client: WireClient, samples: list[float], method: str, path: str, headers: dict,
                 body: object = None, expect: int = 200) -> None:
    started = perf_counter()
    status, data = await client.request(method, path, headers, body)
    samples.append((perf_counter() - started) * 1000)
    assert status == expect, (status, data)


async def idempotency(server: Server, n: int) -> dict:
    _, secret = server.tenant()
    auth = {"authorization": f"Bearer {secret}"}
    agent_file = Path(server.dir.name) / "agent.yaml"
    agent_file.write_text("name: bench\nmodel_class: scripted\ninstructions: x\ntools: []\n")
    from common import cli

    ws = cli(server.db_url, "workspace", "create", "--name", "b2", "--credits", "10")["id"]
    secret2 = cli(server.db_url, "key", "create", "--workspace", ws)["secret"]
    agent = cli(server.db_url, "agent", "create", "--workspace", ws, "--file", str(agent_file))["id"]
    samples: dict[str, list[float]] = {k: [] for k in (
        "identify", "identify_new_key", "identify_replay", "thread", "thread_new_key", "thread_replay")}
    async with WireClient(server.base_url) as c:
        await c.request("POST", "/v1/identify", {**auth, "idempotency-key": "replayed"}, IDENTIFY)
        await c.request("POST", "/v1/loom/threads", {"authorization": f"Bearer {secret2}",
                        "service-subject": "bench:replayed", "idempotency-key": "t-replayed"}, {"agent": agent})
        for i in range(n):
            await _timed(c, samples["identify"], "POST", "/v1/identify", auth, IDENTIFY)
            await _timed(c, samples["identify_new_key"], "POST", "/v1/identify",
                         {**auth, "idempotency-key": str(uuid.uuid4())}, IDENTIFY)
            await _timed(c, samples["identify_replay"], "POST", "/v1/identify",
                         {**auth, "idempotency-key": "replayed"}, IDENTIFY)
            h2 = {"authorization": f"Bearer {secret2}"}
            await _timed(c, samples["thread"], "POST", "/v1/loom/threads",
                         {**h2, "service-subject": f"bench:a{i}"}, {"agent": agent}, 201)
            await _timed(c, samples["thread_new_key"], "POST", "/v1/loom/threads",
                         {**h2, "service-subject": f"bench:b{i}", "idempotency-key": str(uuid.uuid4())},
                         {"agent": agent}, 201)
            await _timed(c, samples["thread_replay"], "POST", "/v1/loom/threads",
                         {**h2, "service-subject": "bench:replayed", "idempotency-key": "t-replayed"},
                         {"agent": agent}, 201)
    return {k: summary(v) for k, v in samples.items()}


async def limiter(server: Server, n: int) -> dict:
    _, secret = server.tenant()
    auth = {"authorization": f"Bearer {secret}"}
    workspace: list[float] = []
    identify: list[float] = []
    async with WireClient(server.base_url) as c:
        for _ in range(n):
            await _timed(c, workspace, "GET", "/v1/workspace", auth)
            await _timed(c, identify, "POST", "/v1/identify", auth, IDENTIFY)
    return {"workspace": summary(workspace), "identify": summary(identify)}


def _redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


def _ratio(a: dict, b: dict) -> float:
    return round(a["median_ms"] / b["median_ms"], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with Server() as server:
        idem = asyncio.run(idempotency(server, args.n))
    limits: dict[str, dict] = {}
    settings = {"off": {}, "memory": {"HEDDLE_RATE_LIMIT_PER_KEY": HIGH, "HEDDLE_RATE_LIMIT_PER_SUBJECT": HIGH}}
    if _redis_up():
        settings["redis"] = {**settings["memory"], "HEDDLE_RATE_LIMIT_STORAGE": "redis://127.0.0.1:6379/0"}
    for name, env in settings.items():
        with Server(**env) as server:
            limits[name] = asyncio.run(limiter(server, args.n))
    ratios = {
        "identify_new_key/identify": _ratio(idem["identify_new_key"], idem["identify"]),
        "identify_replay/identify": _ratio(idem["identify_replay"], idem["identify"]),
        "thread_new_key/thread": _ratio(idem["thread_new_key"], idem["thread"]),
        "thread_replay/thread": _ratio(idem["thread_replay"], idem["thread"]),
        **{f"workspace_{k}/off": _ratio(v["workspace"], limits["off"]["workspace"]) for k, v in limits.items()
           if k != "off"},
        **{f"identify_{k}/off": _ratio(v["identify"], limits["off"]["identify"]) for k, v in limits.items()
           if k != "off"},
    }
    result = {"benchmark": "safe_retries", "idempotency": idem, "rate_limits": limits, "ratios": ratios}
    if args.json:
        print(json.dumps(result))
        return
    for name, s in idem.items():
        print(f"{name:>18}: median {s['median_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms")
    for name, r in limits.items():
        print(f"{'limiter ' + name:>18}: workspace median {r['workspace']['median_ms']:.2f} ms, "
              f"identify median {r['identify']['median_ms']:.2f} ms")
    for name, value in ratios.items():
        print(f"{name:>28}: {value}")


if __name__ == "__main__":
    main()
