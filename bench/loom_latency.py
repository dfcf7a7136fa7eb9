"""Loom latency: POST message -> 202, and message -> run `closed`, with the `scripted` model.

Runs `heddle serve` (one process, embedded SQLite) and drives it from this process with 1, 10
and 100 concurrent threads. The 202 latency is measured by the client; message -> closed is
the server's own `closed_at - created_at` of each run (no polling error). Targets (issue 4):
202 under 5 ms median, a scripted run closed under 50 ms median.

    python bench/loom_latency.py [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, cli, summary  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: Be brief.\ntools: []\n"


def _ts(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


async def _worker(client: httpx.AsyncClient, headers: dict, agent: str, rounds: int, accepted: list, runs: list):
    thread = (await client.post("/v1/loom/threads", json={"agent": agent}, headers=headers)).json()["data"]["id"]
    for i in range(rounds):
        started = time.perf_counter()
        resp = await client.post(f"/v1/loom/threads/{thread}/messages", json={"content": f"hello {i}"}, headers=headers)
        accepted.append((time.perf_counter() - started) * 1000)
        assert resp.status_code == 202, resp.text
        run_id = resp.json()["data"]["run_id"]
        while True:
            run = (await client.get(f"/v1/loom/runs/{run_id}", headers=headers)).json()["data"]
            if run["terminal"]:
                assert run["state"] == "closed", run
                runs.append(run_id)
                break
            await asyncio.sleep(0.05)  # polling is load too; closed latency comes from the server


async def measure(server: Server, secret: str, agent: str, concurrency: int, rounds: int) -> dict:
    accepted: list[float] = []
    runs: list[str] = []
    limits = httpx.Limits(max_connections=concurrency + 5)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60, limits=limits) as client:
        await asyncio.gather(*[
            _worker(client, {"Authorization": f"Bearer {secret}", "Service-Subject": f"bench:c{concurrency}u{i}"},
                    agent, rounds, accepted, runs) for i in range(concurrency)])
        closed = []
        for run_id in runs:
            trace = (await client.get(f"/v1/loom/runs/{run_id}/trace",
                                      headers={"Authorization": f"Bearer {secret}"})).json()["data"]
            closed.append((_ts(trace["closed_at"]) - _ts(trace["opened_at"])).total_seconds() * 1000)
    return {"concurrency": concurrency, "accepted_202": summary(accepted), "message_to_closed": summary(closed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20, help="messages per thread (default 20)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with Server() as server:
        ws, secret = server.tenant()
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(AGENT)
        agent = cli(server.db_url, "agent", "create", "--workspace", ws, "--file", f.name)["id"]
        results = []
        for concurrency, rounds in ((1, args.rounds * 5), (10, args.rounds), (100, max(2, args.rounds // 5))):
            results.append(asyncio.run(measure(server, secret, agent, concurrency, rounds)))
    if args.json:
        print(json.dumps({"benchmark": "loom_latency", "results": results}))
        return
    print(f"{'threads':>8} {'202 median':>11} {'202 p99':>9} {'closed median':>14} {'closed p99':>11}  runs")
    for r in results:
        a, c = r["accepted_202"], r["message_to_closed"]
        print(f"{r['concurrency']:>8} {a['median_ms']:>9.2f}ms {a['p99_ms']:>7.2f}ms {c['median_ms']:>12.2f}ms "
              f"{c['p99_ms']:>9.2f}ms  {c['n']}")
    print("targets: 202 < 5 ms median; closed < 50 ms median (one process, SQLite)")


if __name__ == "__main__":
    main()
