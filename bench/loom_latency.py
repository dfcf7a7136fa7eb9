"""Loom latency: POST message -> 202, and message -> run `closed`, with the `scripted` model.

Runs `heddle serve` (one process, embedded SQLite) and drives it from this process with 1, 10
and 100 concurrent threads. The 202 latency is measured by the client, over one keep-alive
connection per thread framed with h11 (see common.WireClient: httpx alone adds 1-3 ms here),
and by the server (its request log); message -> closed is the server's own
`closed_at - opened_at` of each run (no polling error). Targets (issue 4):
202 under 5 ms median, a scripted run closed under 50 ms median.

    python bench/loom_latency.py [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sqlite3
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, WireClient, create_agent, summary  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: Be brief.\ntools: []\n"


def _ts(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


async def _worker(base_url: str, headers: dict, agent: str, rounds: int, accepted: list, runs: list,
                  threads: list):
    async with WireClient(base_url) as client:
        status, body = await client.request("POST", "/v1/loom/threads", headers, {"agent": agent})
        thread = body["data"]["id"]
        threads.append(thread)
        for i in range(rounds):
            started = time.perf_counter()
            status, body = await client.request("POST", f"/v1/loom/threads/{thread}/messages", headers,
                                                {"content": f"hello {i}"})
            accepted.append((time.perf_counter() - started) * 1000)
            assert status == 202, body
            run_id = body["data"]["run_id"]
            while True:
                await asyncio.sleep(0.05)  # polling is load too; closed latency comes from the server
                _, run = await client.request("GET", f"/v1/loom/runs/{run_id}", headers)
                if run["data"]["terminal"]:
                    assert run["data"]["state"] == "closed", run
                    runs.append(run_id)
                    break


async def measure(server: Server, secret: str, agent: str, concurrency: int, rounds: int) -> dict:
    accepted: list[float] = []
    runs: list[str] = []
    threads: list[str] = []
    await asyncio.gather(*[
        _worker(server.base_url, {"authorization": f"Bearer {secret}",
                                  "service-subject": f"bench:c{concurrency}u{i}"}, agent, rounds, accepted, runs,
                threads)
        for i in range(concurrency)])
    closed = []
    limits = httpx.Limits(max_connections=10)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60, limits=limits) as client:
        for run_id in runs:
            trace = (await client.get(f"/v1/loom/runs/{run_id}/trace",
                                      headers={"Authorization": f"Bearer {secret}"})).json()["data"]
            closed.append((_ts(trace["closed_at"]) - _ts(trace["opened_at"])).total_seconds() * 1000)
    await asyncio.sleep(0.3)  # let the request log's batch writer catch up
    return {"concurrency": concurrency, "accepted_202": summary(accepted),
            "accepted_202_server": summary(_served_ms(server, threads)),
            "message_to_closed": summary(closed)}


def _served_ms(server: Server, threads: list[str]) -> list[float]:
    """The server's own latency of each POST message (request log: until the response was sent)."""
    paths = {f"/v1/loom/threads/{t}/messages" for t in threads}
    db = sqlite3.connect(server.db_url.split("///", 1)[1])
    try:
        rows = db.execute("SELECT path, latency_ms FROM request_log WHERE method = 'POST' AND status = 202")
        return [latency for path, latency in rows if path in paths]
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20, help="messages per thread (default 20)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with Server() as server:
        ws, secret = server.tenant()
        agent = create_agent(server.db_url, ws, AGENT)
        results = []
        for concurrency, rounds in ((1, args.rounds * 5), (10, args.rounds), (100, max(2, args.rounds // 5))):
            results.append(asyncio.run(measure(server, secret, agent, concurrency, rounds)))
    if args.json:
        print(json.dumps({"benchmark": "loom_latency", "results": results}))
        return
    print(f"{'threads':>8} {'202 median':>11} {'202 p99':>9} {'server median':>14} {'closed median':>14} "
          f"{'closed p99':>11}  runs")
    for r in results:
        a, s, c = r["accepted_202"], r["accepted_202_server"], r["message_to_closed"]
        print(f"{r['concurrency']:>8} {a['median_ms']:>9.2f}ms {a['p99_ms']:>7.2f}ms {s.get('median_ms', 0):>12.2f}ms "
              f"{c['median_ms']:>12.2f}ms {c['p99_ms']:>9.2f}ms  {c['n']}")
    print("targets: 202 < 5 ms median; closed < 50 ms median (one process, SQLite)")
    print("202: measured by the client (one keep-alive connection per thread, h11); server: the "
          "request log's own latency of the same requests")


if __name__ == "__main__":
    main()
