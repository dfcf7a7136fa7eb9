"""The MCP phases of bench/abuse.py (issue 40): a tenant's own hostile MCP server against Heddle.

The hostile server is tests/mcp_runs/hostile_mcp.py in a process of its own (so that serving
megabytes of tool lists does not share the bench's GIL), with a mint that gives any subject a
token. The attacker workspace registers it (`heddle connection create --kind mcp`) and
`--mcp-subjects` subjects (default 4) each post, one after another, messages whose run calls one
of its tools, for the whole measurement; the victim's mix runs meanwhile.

Each subject starts at most one run a second (`pace`): the figures are what the MCP server makes
each run cost the server, not those of a flood of plain requests (the other phases' business).

* ``mcp-paged-list``: `tools/list` answers 1,600 tools a page (0.88 MB) with a `nextCursor` for
  50 pages: the issue's list. Before issue 40, four subjects took the server from 273 to 814 MiB
  and the victim's `GET /v1/workspace` to p50 450 ms.
* ``mcp-resumption``: the server lists `echo` and answers its `tools/call` with one SSE event
  (`id`, `retry: 0`) then closes, and every resumption the same: before, 1,900 reconnects in
  7.8 s for one call.

Each phase reports the victim's latency against a quiet baseline taken right before it, the
server's RSS before, at its peak during and after the attack (from /proc), what the attackers'
runs ended in, and the server's `heddle_mcp_limits_total` counters.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
from common import Server, WireClient, cli, create_agent

HOSTILE = Path(__file__).resolve().parents[1] / "tests" / "mcp_runs" / "hostile_mcp.py"
HOST = "127.0.0.3"
CONTENT = {"paged": "call: t0_0 {}", "call_loop": "call: echo {}", "control": "hello"}


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def served(url: str) -> dict[str, int]:
    """What the hostile server was asked (requests by JSON-RPC method; `resume` for resumptions)."""
    return httpx.get(url.removesuffix("/mcp") + "/counts", timeout=5).json()


@contextlib.contextmanager
def hostile(mode: str):
    """The hostile server in a subprocess; its /mcp URL."""
    proc = subprocess.Popen([sys.executable, str(HOSTILE), "--mode", mode, "--host", HOST],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = proc.stdout.readline().strip()
        if not url:
            raise RuntimeError("the hostile MCP server did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def arm(server: Server, workspace: str, url: str, name: str) -> str:
    """Register the hostile server (and its mint) for the attacker's workspace; an agent using it."""
    base = url.removesuffix("/mcp")
    # --dev: plain http on a loopback address, as the server runs with HEDDLE_OUTBOUND_ALLOW_PRIVATE.
    cli(server.db_url, "workspace", "update", workspace, "--mint-url", f"{base}/mint", "--dev")
    cli(server.db_url, "connection", "create", "--workspace", workspace, "--name", name, "--base-url", url,
        "--kind", "mcp", "--dev")
    agent = f"name: {name}-agent\nmodel_class: scripted\ninstructions: You help.\ntools:\n  - mcp: {name}\n"
    return create_agent(server.db_url, workspace, agent)


async def _attacker(base_url: str, secret: str, agent: str, subject: str, content: str, stop: asyncio.Event,
                    outcomes: Counter, pace: float) -> None:
    """One subject posting a message in a new thread and waiting for its run to settle, at most one
    run every `pace` seconds (a person's pace, under the default rate limits: what is measured is
    what the MCP server makes each run cost, not a flood of requests). A call of unknown fate
    is confirmed (`occurred`), so that the thread is free for the next message."""
    h = {"authorization": f"Bearer {secret}", "service-subject": subject}
    async with WireClient(base_url) as http:
        while not stop.is_set():
            began = time.monotonic()
            status, body = await http.request("POST", "/v1/loom/threads", h, {"agent": agent})
            if status not in (200, 201):
                outcomes[f"thread {status}"] += 1
                await asyncio.sleep(pace)
                continue
            status, body = await http.request("POST", f"/v1/loom/threads/{body['data']['id']}/messages", h,
                                              {"content": content})
            if status != 202:
                outcomes[f"message {status}"] += 1
                await asyncio.sleep(pace)
                continue
            run_id = body["data"]["run_id"]
            while True:
                if stop.is_set():
                    outcomes["unsettled when the measurement ended"] += 1
                    break
                _, body = await http.request("GET", f"/v1/loom/runs/{run_id}", h)
                run = body["data"]
                if run["state"] in ("closed", "failed", "awaiting_outcome", "awaiting_input"):
                    outcomes[f"{run['state']} {(run.get('error') or {}).get('code') or ''}".strip()] += 1
                    if run["state"] == "awaiting_outcome":
                        for call in (run.get("pending") or {}).get("tool_calls") or []:
                            await http.request("POST", f"/v1/loom/runs/{run_id}/outcome", h,
                                               {"tool_call_id": call["id"], "state": "occurred"})
                    break
                await asyncio.sleep(0.5)  # polled at a client's pace too: the calls are what is measured
            await asyncio.sleep(max(0.0, pace - (time.monotonic() - began)))


async def attack(server: Server, mode: str, secret: str, agent: str, subjects: int, measure,
                 pace: float = 1.0) -> dict:
    """Run `measure()` (the victim's mix) while `subjects` attackers run; the figures."""
    pid = server.proc.pid
    stop, outcomes = asyncio.Event(), Counter()
    rss_before = rss_mib(pid)
    peak = rss_before

    async def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, rss_mib(pid))
            await asyncio.sleep(0.25)

    content = CONTENT[mode]
    tasks = [asyncio.create_task(_attacker(server.base_url, secret, agent, f"web:attacker{i}", content, stop,
                                           outcomes, pace)) for i in range(subjects)]
    sampler = asyncio.create_task(sample())
    started = time.monotonic()
    await asyncio.sleep(3.0)  # the attack is under way (lists fetched, loops begun) before measuring
    try:
        samples, failures = await measure()
    finally:
        stop.set()
        await asyncio.gather(*tasks, sampler, return_exceptions=True)
    took = time.monotonic() - started
    await asyncio.sleep(2.0)
    return {"samples": samples, "failures": failures, "subjects": subjects, "attack_seconds": round(took, 1),
            "attacker_runs": dict(outcomes), "rss_mib": {"before": rss_before, "peak": peak, "after": rss_mib(pid)}}
