"""What safe retries and rate limits cost per request, as ratios (timings on a shared machine
are noisy; the ratios of interleaved samples are what to compare).

- Identify and thread creation without a key, with a fresh `Idempotency-Key` each time (the
  key's row is written in the request's transaction), and replayed (the same key again).
- The rate limiter's check (a key and a subject bucket, two windows each) in process, with
  memory storage and with Redis when 127.0.0.1:6379 answers: microseconds added per request.

One `heddle serve` (SQLite), one keep-alive connection (h11), requests interleaved across the
variants.

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


async def limiter_check_us(storage: str, n: int) -> dict:
    """Microseconds per `RateLimiter.check` (key and subject buckets, two windows each), in
    process: the cost the limiter adds to every authenticated request."""
    from heddle.auth.context import AuthContext, WorkspaceInfo
    from heddle.ratelimit.limiter import RateLimiter

    limiter = RateLimiter(per_key="1000000/second;1000000/minute", per_subject="1000000/second;1000000/minute",
                          storage_uri=storage)
    ws = WorkspaceInfo(id=f"ws_bench{uuid.uuid4().hex[:8]}", name="b", allowed_origins=(), realtime_enabled=False,
                       request_secret="x", mint_url=None)
    ctx = AuthContext(mode="relay", workspace=ws, key_id="key_bench", subject="web:bench")
    for _ in range(50):
        await limiter.check(ctx)
    samples = []
    for _ in range(n):
        started = perf_counter()
        await limiter.check(ctx)
        samples.append((perf_counter() - started) * 1_000_000)
    stats = summary(samples)
    return {"n": stats["n"], "median_us": stats["median_ms"], "p99_us": stats["p99_ms"]}


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
    storages = ["memory://"] + (["redis://127.0.0.1:6379/0"] if _redis_up() else [])
    limits = {uri.split(":")[0]: asyncio.run(limiter_check_us(uri, args.n * 10)) for uri in storages}
    ratios = {
        "identify_new_key/identify": _ratio(idem["identify_new_key"], idem["identify"]),
        "identify_replay/identify": _ratio(idem["identify_replay"], idem["identify"]),
        "thread_new_key/thread": _ratio(idem["thread_new_key"], idem["thread"]),
        "thread_replay/thread": _ratio(idem["thread_replay"], idem["thread"]),
    }
    result = {"benchmark": "safe_retries", "idempotency": idem, "rate_limits": limits, "ratios": ratios}
    if args.json:
        print(json.dumps(result))
        return
    for name, s in idem.items():
        print(f"{name:>18}: median {s['median_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms")
    for name, r in limits.items():
        print(f"{'limiter ' + name:>18}: {r['median_us']:.1f} us median, {r['p99_us']:.1f} us p99 per check")
    for name, value in ratios.items():
        print(f"{name:>28}: {value}")


if __name__ == "__main__":
    main()
