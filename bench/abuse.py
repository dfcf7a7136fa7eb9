"""Other clients' latency with and without abuse (issues 15 and 26), in one run.

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

Issue 26 adds two phases (`abuse_idle.py`), each measured against the same baseline:
`--streams` (3,000) run event streams opened by one attacker key and held idle (spread over 12
loopback source addresses, so that the key's stream cap, not the per-address connection cap,
is what refuses most of them), and `--sockets` (10,000) TCP connections from one other address
that send half a request head and stall. Each phase is compared with a quiet baseline measured
right before it, in the same run. The victim's mix then also reads its run
(`GET /v1/loom/runs/{id}`). Each phase prints what the attackers were answered (status
counts: 200 streams held, 429 over the key's stream cap, 503 over a connection cap, 0 no answer
yet: a stalled head still inside its deadline). The server runs with its defaults except
`HEDDLE_BODY_TIMEOUT=600` (so that the slow bodies stay in progress) and
`HEDDLE_MAX_CONNECTIONS=16384` (so that the 3,000 spread streams meet the stream cap rather
than the total connection cap, which would also refuse the victim's connection). The attackers
run in a child process each (`abuse_idle.py`), and the victim is measured once the burst of
refusals has settled (`SETTLE`): the idle state the issue describes.

`--phases ...,idle-websockets` adds `--websockets` (10,000) WebSockets from one other address
that never subscribe nor read (the realtime server's per-address and unauthenticated caps).

`--phases ...,mcp-control,mcp-paged-list,mcp-resumption` adds issue 40's attacks by a tenant's own
MCP server (bench/abuse_mcp.py): the paged tool list and the resumption loop, with the server's RSS
before, at its peak and after each, and a control: the same attackers at the same pace whose runs
call no MCP server.

    python bench/abuse.py [--attackers 64] [--streams 3000] [--sockets 10000] [--websockets 10000]
                          [--rounds 40] [--phases slow-bodies,idle-streams,idle-sockets[,idle-websockets]
                          [,mcp-control,mcp-paged-list,mcp-resumption]] [--mcp-subjects 4]
                          [--database-url URL] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import h11

sys.path.insert(0, str(Path(__file__).parent))
from abuse_idle import close_all, held, raise_open_files  # noqa: E402
from abuse_mcp import arm, attack, hostile, served  # noqa: E402
from common import Server, WireClient, create_agent, summary  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: You help.\ntools:\n  - builtin: identify\n"
ANSWER_WITHIN = 60.0
PHASES = ("slow-bodies", "idle-streams", "idle-sockets", "idle-websockets", "mcp-control", "mcp-paged-list",
          "mcp-resumption")
DEFAULT_PHASES = PHASES[:3]  # the others on request: 10,000 handshakes take a while
# mcp-control: the same attackers at the same pace, with runs that call no MCP server (what
# their plain requests and run writes cost the victim, against which the two attacks compare).
MCP_PHASES = {"mcp-control": "control", "mcp-paged-list": "paged", "mcp-resumption": "call_loop"}
STREAM_SOURCES = [f"127.0.0.{n}" for n in range(2, 14)]  # the stream attacker's addresses
SOCKET_SOURCE = "127.0.0.20"  # the idle-socket attacker's address (the victim uses 127.0.0.1)
WEBSOCKET_SOURCE = "127.0.0.30"  # the idle-WebSocket attacker's
# Seconds between the last attacking connection's answer and the measurement: what is measured
# is the idle state (refused connections closed: uvicorn's 5 s keep-alive after a 429, a second
# of lingering after a 503), still inside the 10 s head deadline of the stalled heads it admitted.
SETTLE = 6.0


def _agent(server: Server, workspace: str) -> str:
    return create_agent(server.db_url, workspace, AGENT)


async def _open_thread(http: WireClient, headers: dict[str, str], agent: str) -> str:
    status, body = await http.request("POST", "/v1/loom/threads", headers, {"agent": agent})
    assert status in (200, 201), (status, body)
    return body["data"]["id"]


async def _run_in(http: WireClient, headers: dict[str, str], thread: str, content: str, until: str) -> str:
    """Post a message and wait for its run to reach `until`; the run id."""
    status, body = await http.request("POST", f"/v1/loom/threads/{thread}/messages", headers, {"content": content})
    assert status == 202, (status, body)
    run_id = body["data"]["run_id"]
    for _ in range(200):
        status, body = await http.request("GET", f"/v1/loom/runs/{run_id}", headers)
        if body["data"]["state"] == until:
            return run_id
        await asyncio.sleep(0.05)
    raise RuntimeError(f"run {run_id} did not reach {until}")


def _mix(headers: dict[str, str], agent: str, thread: str, run_id: str) -> list[tuple[str, str, dict, object]]:
    key_only = {"authorization": headers["authorization"]}
    return [
        ("GET", "/v1/workspace", key_only, None),
        ("GET", f"/v1/loom/runs/{run_id}", headers, None),
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


async def _metrics(server: Server, *names: str) -> dict[str, float]:
    """The server's counters whose names start with one of `names` (labels kept)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    text = (await reader.read()).decode()
    writer.close()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line.startswith(names) and not line.startswith("#")}


def _phase(samples: list[float], failures: int, base: dict, **extra) -> dict:
    under = summary(samples)
    return {**under, "failures": failures, **extra,
            "p50_ratio": round(under["median_ms"] / base["median_ms"], 2) if under.get("n") else None,
            "p99_ratio": round(under["p99_ms"] / base["p99_ms"], 2) if under.get("n") else None}


async def run(server: Server, attackers: int, rounds: int, streams: int = 3000, sockets: int = 10_000,
              phases: tuple[str, ...] = DEFAULT_PHASES, websockets: int = 10_000, mcp_subjects: int = 4) -> dict:
    victim_ws, victim_secret = server.tenant()
    attacker_ws, attacker_secret = server.tenant()
    victim_agent, attacker_agent = _agent(server, victim_ws), _agent(server, attacker_ws)
    victim = {"authorization": f"Bearer {victim_secret}", "service-subject": "web:victim"}
    attacker = {"authorization": f"Bearer {attacker_secret}", "service-subject": "web:attacker"}
    async with WireClient(server.base_url) as http:
        thread = await _open_thread(http, victim, victim_agent)
        victim_run = await _run_in(http, victim, thread, "hello", "closed")
        attacker_thread = await _open_thread(http, attacker, attacker_agent)
        waiting_run = await _run_in(http, attacker, attacker_thread, "ask: Which one?", "awaiting_input")
    mix = _mix(victim, victim_agent, thread, victim_run)
    await _measure(server.base_url, mix, 4)  # warm up
    result: dict = {"bench": "abuse", "database": "postgresql" if server.db_url.startswith("postgresql") else "sqlite",
                    "requests_per_phase": rounds * len(mix)}

    async def quiet() -> dict:
        """The baseline, measured again right before each phase: on a shared machine the load of
        other processes drifts over a run, and each phase is compared with its own quiet moment."""
        samples, failures = await _measure(server.base_url, mix, rounds)
        return {**summary(samples), "failures": failures}

    if "slow-bodies" in phases:
        base = result.setdefault("baseline", await quiet())
        others = ["/v1/loom/threads", f"/v1/loom/threads/{attacker_thread}/messages", "/v1/identify"]
        paths = [("/v1/loom/realtime/auth" if i % 8 < 5 else others[i % 3]) for i in range(attackers)]
        writers = await _hold(server, attacker, paths)
        try:
            await asyncio.sleep(0.5)  # every held request has reached the server
            samples, failures = await _measure(server.base_url, mix, rounds)
        finally:
            close_all(writers)
        result["slow_bodies"] = _phase(samples, failures, base, attackers=attackers, baseline=base)
    if "idle-streams" in phases:
        base = await quiet()
        result.setdefault("baseline", base)
        # Without Service-Subject, a relay key reads every run of its workspace: one key, no subject cap.
        key_only = {"authorization": attacker["authorization"]}
        async with held("streams", server.port, streams, run_id=waiting_run, headers=key_only,
                        sources=STREAM_SOURCES) as answered:
            await asyncio.sleep(SETTLE)
            samples, failures = await _measure(server.base_url, mix, rounds)
        result["idle_streams"] = _phase(samples, failures, base, opened=streams, answered=answered, baseline=base)
        await asyncio.sleep(2.0)  # the server notices the closes
    if "idle-sockets" in phases:
        base = await quiet()
        result.setdefault("baseline", base)
        async with held("sockets", server.port, sockets, sources=[SOCKET_SOURCE]) as answered:
            await asyncio.sleep(SETTLE)
            samples, failures = await _measure(server.base_url, mix, rounds)
        result["idle_sockets"] = _phase(samples, failures, base, opened=sockets, answered=answered, baseline=base)
    if "idle-websockets" in phases:
        async with WireClient(server.base_url) as http:
            _, config = await http.request("GET", "/v1/loom/realtime/config", victim)
        base = await quiet()
        result.setdefault("baseline", base)
        async with held("websockets", server.port, websockets, run_id=config["data"]["key"],
                        sources=[WEBSOCKET_SOURCE]) as answered:
            await asyncio.sleep(SETTLE)
            samples, failures = await _measure(server.base_url, mix, rounds)
        result["idle_websockets"] = _phase(samples, failures, base, opened=websockets, answered=answered,
                                           baseline=base)
    for phase, mode in MCP_PHASES.items():
        if phase not in phases:
            continue
        with hostile("paged" if mode == "control" else mode) as url:
            agent = attacker_agent if mode == "control" else arm(server, attacker_ws, url, mode.replace("_", "-"))
            base = await quiet()
            result.setdefault("baseline", base)
            figures = await attack(server, mode, attacker_secret, agent, mcp_subjects,
                                   lambda: _measure(server.base_url, mix, rounds))
            figures["hostile_served"] = served(url)
        samples, failures = figures.pop("samples"), figures.pop("failures")
        result[phase.replace("-", "_")] = _phase(samples, failures, base, **figures, baseline=base)
    result["server_counters"] = await _metrics(server, "heddle_mcp_limits_total",
                                               "heddle_http_connections_refused_total",
                                               "heddle_http_head_timeouts_total",
                                               "heddle_event_streams_refused_total",
                                               "heddle_realtime_connections_refused_total")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attackers", type=int, default=64)
    parser.add_argument("--streams", type=int, default=3000)
    parser.add_argument("--sockets", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--websockets", type=int, default=10_000)
    parser.add_argument("--mcp-subjects", type=int, default=4, help="attacking subjects of the MCP phases")
    parser.add_argument("--phases", default=",".join(DEFAULT_PHASES), help="comma-separated, from " + ", ".join(PHASES))
    parser.add_argument("--database-url", help="a PostgreSQL URL (an empty database) instead of SQLite")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    phases = tuple(p for p in args.phases.split(",") if p)
    if unknown := set(phases) - set(PHASES):
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    raise_open_files(args.streams + args.sockets + args.attackers)
    # A long body timeout, so that the attack is still in progress while the victim is measured.
    # Private outbound addresses allowed: the MCP phases' hostile server is on loopback.
    server = Server(HEDDLE_BODY_TIMEOUT="600", HEDDLE_MAX_CONNECTIONS="16384", HEDDLE_OUTBOUND_ALLOW_PRIVATE="true")
    if args.database_url:
        server.db_url = args.database_url
        server.env["HEDDLE_DATABASE_URL"] = args.database_url
    with server:
        result = asyncio.run(run(server, args.attackers, args.rounds, args.streams, args.sockets, phases,
                                 args.websockets, args.mcp_subjects))
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(result))
        return
    b = result["baseline"]
    print(f"{'first baseline':>14}: p50 {b['median_ms']:.2f} ms, p99 {b['p99_ms']:.2f} ms, {b['n']} requests, "
          f"{b['failures']} failed")
    for phase in ("slow_bodies", "idle_streams", "idle_sockets", "idle_websockets", "mcp_control",
                  "mcp_paged_list", "mcp_resumption"):
        if (r := result.get(phase)) is None:
            continue
        if phase.startswith("mcp_"):
            q, m = r["baseline"], r["rss_mib"]
            print(f"{phase:>14}: p50 {r['median_ms']:.2f} ms (x{r['p50_ratio']} of {q['median_ms']:.2f}), "
                  f"p99 {r['p99_ms']:.2f} ms (x{r['p99_ratio']} of {q['p99_ms']:.2f}), {r['n']} requests, "
                  f"{r['failures']} failed; server RSS {m['before']} -> peak {m['peak']} -> {m['after']} MiB; "
                  f"{r['subjects']} attacking subjects' runs: {r['attacker_runs']}; the hostile server was "
                  f"asked {r['hostile_served']}")
            continue
        what = {"slow_bodies": f"{r.get('attackers')} half-sent bodies",
                "idle_streams": f"{r.get('opened')} idle streams of one key, answered {r.get('answered')}",
                "idle_sockets": f"{r.get('opened')} stalled heads from one address, "
                                f"answered {r.get('answered')}",
                "idle_websockets": f"{r.get('opened')} idle WebSockets from one address, "
                                   f"answered {r.get('answered')}"}[phase]
        q = r["baseline"]
        print(f"{phase:>14}: p50 {r['median_ms']:.2f} ms (x{r['p50_ratio']} of {q['median_ms']:.2f}), "
              f"p99 {r['p99_ms']:.2f} ms (x{r['p99_ratio']} of {q['p99_ms']:.2f}), {r['n']} requests, "
              f"{r['failures']} failed; {what}")
    print(f"server counters: {result['server_counters']}")
    print(f"load average (1, 5, 15 min) after the run: {result['load_average']}")


if __name__ == "__main__":
    main()
