"""Other clients' latency with and without a slow-body attack (issue 15), in one run.

`heddle serve` in a subprocess (a fresh SQLite file, or `--database-url` for PostgreSQL). A
victim workspace makes a fixed mix of requests one at a time over one keep-alive connection
(`WireClient`): `GET /v1/workspace`, `POST /v1/loom/threads`, `GET /v1/loom/threads`,
`POST /v1/identify` and `POST /v1/loom/realtime/auth`. First alone (baseline), then while
`--attackers` raw connections (default 64) of another workspace, with a valid key, hold
requests open after sending their head and half their body (most on the realtime auth route,
the rest on the other body-taking routes). Reports p50/p99 of both phases, their ratios and
the victim's failures (any non-2xx, or no answer within 60 s).

Before issue 15, once 16 such connections (31 on PostgreSQL: the pool sizes) were open, every
victim request waited for the pool timeout (30 s) and failed with 500.

    python bench/abuse.py [--attackers 64] [--rounds 40] [--database-url URL] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import h11

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, WireClient, create_agent, summary  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: You help.\ntools:\n  - builtin: identify\n"
ANSWER_WITHIN = 60.0


def _agent(server: Server, workspace: str) -> str:
    return create_agent(server.db_url, workspace, AGENT)


async def _open_thread(http: WireClient, headers: dict[str, str], agent: str) -> str:
    status, body = await http.request("POST", "/v1/loom/threads", headers, {"agent": agent})
    assert status in (200, 201), (status, body)
    return body["data"]["id"]


def _mix(headers: dict[str, str], agent: str, thread: str) -> list[tuple[str, str, dict, object]]:
    key_only = {"authorization": headers["authorization"]}
    return [
        ("GET", "/v1/workspace", key_only, None),
        ("POST", "/v1/loom/threads", headers, {"agent": agent}),
        ("GET", "/v1/loom/threads", headers, None),
        ("POST", "/v1/identify", key_only, {"identifier": "DEUTDEFF"}),
        ("POST", "/v1/loom/realtime/auth", headers,
         {"socket_id": "123.456", "channel_name": f"private-thread-{thread}"}),
    ]


async def _measure(base_url: str, mix, rounds: int) -> tuple[list[float], int]:
    """Latencies (ms) of answered requests and the number of failures (non-2xx, no answer in
    time, or the connection dropped: then a new connection is opened)."""
    samples, failures = [], 0
    http = await WireClient(base_url).__aenter__()
    try:
        for _ in range(rounds):
            for method, path, headers, body in mix:
                started = time.perf_counter()
                try:
                    status, _ = await asyncio.wait_for(http.request(method, path, headers, body), ANSWER_WITHIN)
                except (TimeoutError, OSError, h11.ProtocolError):
                    failures += 1
                    await http.__aexit__(None, None, None)
                    http = await WireClient(base_url).__aenter__()
                    continue
                samples.append((time.perf_counter() - started) * 1000)
                failures += not 200 <= status < 300
    finally:
        await http.__aexit__(None, None, None)
    return samples, failures


async def _hold(server: Server, headers: dict[str, str], paths: list[str]) -> list[asyncio.StreamWriter]:
    """Open one connection per path, send the head and half the body, and keep it open."""
    writers = []
    for path in paths:
        _, writer = await asyncio.open_connection("127.0.0.1", server.port)
        head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
                "Content-Length: 200", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + b'{"socket_id": "1')
        await writer.drain()
        writers.append(writer)
    return writers


async def run(server: Server, attackers: int, rounds: int) -> dict:
    victim_ws, victim_secret = server.tenant()
    attacker_ws, attacker_secret = server.tenant()
    victim_agent, attacker_agent = _agent(server, victim_ws), _agent(server, attacker_ws)
    victim = {"authorization": f"Bearer {victim_secret}", "service-subject": "web:victim"}
    attacker = {"authorization": f"Bearer {attacker_secret}", "service-subject": "web:attacker"}
    async with WireClient(server.base_url) as http:
        thread = await _open_thread(http, victim, victim_agent)
        attacker_thread = await _open_thread(http, attacker, attacker_agent)
    mix = _mix(victim, victim_agent, thread)
    await _measure(server.base_url, mix, 4)  # warm up
    baseline, baseline_failures = await _measure(server.base_url, mix, rounds)
    others = ["/v1/loom/threads", f"/v1/loom/threads/{attacker_thread}/messages", "/v1/identify"]
    paths = [("/v1/loom/realtime/auth" if i % 8 < 5 else others[i % 3]) for i in range(attackers)]
    writers = await _hold(server, attacker, paths)
    try:
        await asyncio.sleep(0.5)  # every held request has reached the server
        attacked, attacked_failures = await _measure(server.base_url, mix, rounds)
    finally:
        for writer in writers:
            writer.close()
    base, under = summary(baseline), summary(attacked)
    return {
        "bench": "abuse", "database": "postgresql" if server.db_url.startswith("postgresql") else "sqlite",
        "attackers": attackers, "requests_per_phase": rounds * len(mix),
        "baseline": {**base, "failures": baseline_failures},
        "under_slow_body_attack": {**under, "failures": attacked_failures},
        "p50_ratio": round(under["median_ms"] / base["median_ms"], 2) if under.get("n") else None,
        "p99_ratio": round(under["p99_ms"] / base["p99_ms"], 2) if under.get("n") else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attackers", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--database-url", help="a PostgreSQL URL (an empty database) instead of SQLite")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    # A long body timeout, so that the attack is still in progress while the victim is measured.
    server = Server(HEDDLE_BODY_TIMEOUT="600")
    if args.database_url:
        server.db_url = args.database_url
        server.env["HEDDLE_DATABASE_URL"] = args.database_url
    with server:
        result = asyncio.run(run(server, args.attackers, args.rounds))
    if args.json:
        print(json.dumps(result))
        return
    for phase in ("baseline", "under_slow_body_attack"):
        r = result[phase]
        print(f"{phase:>24}: p50 {r['median_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, "
              f"{r['n']} requests, {r['failures']} failed")
    print(f"{result['attackers']} held half-sent bodies: p50 x{result['p50_ratio']}, p99 x{result['p99_ratio']}")


if __name__ == "__main__":
    main()
