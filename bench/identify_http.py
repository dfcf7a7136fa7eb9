"""Identify over HTTP, as a ratio of trivial endpoints of the same server in the same run.

Runs `heddle serve` (SQLite) in a subprocess and drives it with a fixed number of concurrent
keep-alive connections from this process. Each endpoint is measured in alternating rounds, so
a noisy neighbour affects all of them alike. Reported:

- `POST /v1/identify` with identifiers that are identified (so every call is also a charge),
- `GET /v1/workspace`: authenticated, one read (the trivial *authenticated* baseline),
- `GET /healthz`: no auth, no database (the floor of the stack).

Target (issue 3): identify >= 50% of the baseline's requests per second; in-process lookups in
the tens of microseconds (see bench/identify_lookup.py, also run here).

    python bench/identify_http.py [--seconds 3] [--concurrency 16] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, WireClient  # noqa: E402
from identify_lookup import bench_lookups  # noqa: E402

IDENTIFIED = ["DEUTDEFF", "CHASUS33", "021000021", "SBIN0000300", "DE89370400440532013000", "NWBKGB2L"]


async def _rate(base_url: str, method: str, path: str, headers: dict, bodies, seconds: float,
                concurrency: int) -> float:
    """Requests per second over `concurrency` keep-alive connections (h11, see common.WireClient:
    httpx would be the bottleneck of the cheap baselines, flattering the ratio)."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker():
        nonlocal done
        async with WireClient(base_url) as client:
            while time.perf_counter() < deadline:
                body = next(bodies) if bodies else None
                status, payload = await client.request(method, path, headers, body)
                assert status == 200, payload
                done += 1

    started = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(concurrency)])
    return done / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    lookups = bench_lookups(0.5)
    with Server() as server:
        _, secret = server.tenant(credits=10_000_000)
        auth = {"authorization": f"Bearer {secret}"}
        plans = {
            "identify": ("POST", "/v1/identify", auth, True),
            "workspace": ("GET", "/v1/workspace", auth, False),
            "healthz": ("GET", "/healthz", {}, False),
        }
        rates: dict[str, list[float]] = {name: [] for name in plans}
        for _ in range(args.rounds):
            for name, (method, path, headers, with_body) in plans.items():
                bodies = itertools.cycle([{"identifier": i} for i in IDENTIFIED]) if with_body else None
                rates[name].append(asyncio.run(_rate(server.base_url, method, path, headers, bodies,
                                                     args.seconds, args.concurrency)))
    best = {name: max(values) for name, values in rates.items()}
    result = {
        "benchmark": "identify_http", "concurrency": args.concurrency,
        "requests_per_second": {k: round(v, 1) for k, v in best.items()},
        "identify_vs_workspace": round(best["identify"] / best["workspace"], 3),
        "identify_vs_healthz": round(best["identify"] / best["healthz"], 3),
        "lookup_us": {rail: round(1e6 / rate, 1) for rail, rate in lookups.items()},
    }
    if args.json:
        print(json.dumps(result))
        return
    for name, rate in best.items():
        print(f"{name:<10} {rate:>9,.0f} req/s")
    print(f"identify / GET /v1/workspace = {result['identify_vs_workspace']:.0%}   (target >= 50%)")
    print(f"identify / GET /healthz      = {result['identify_vs_healthz']:.0%}")
    print("in-process lookup (us): " + ", ".join(f"{k} {v}" for k, v in result["lookup_us"].items()))


if __name__ == "__main__":
    main()
