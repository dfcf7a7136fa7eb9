"""Realtime: idle subscribers one `heddle serve` process holds, and event latency to pusher-js.

1. Connects N idle Pusher-protocol subscribers (Python `websockets`, each on its own thread
   channel, subscription signed with the server's configured key/secret), counts how many the
   server holds, and reads the server's RSS.
2. Runs the real pusher-js client (tests/realtime/js, installed with npm ci) on one thread and
   posts M messages; latency = the time pusher-js received `run.updated` minus the run's
   `updated_at` (set in the transaction that committed the change). Same machine, same clock.

Targets (issue 6): p99 latency under 50 ms; 1,000 idle subscribers.

    python bench/realtime.py [--subscribers 1000] [--messages 30] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import hmac
import json
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, cli, summary  # noqa: E402

KEY, SECRET = "bench-key", "bench-secret-" + uuid.uuid4().hex
JS = Path(__file__).parents[1] / "tests" / "realtime" / "js"


def _raise_fd_limit(n: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, n))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def idle_subscribers(server: Server, n: int) -> dict:
    url = f"ws://127.0.0.1:{server.port}/app/{KEY}?protocol=7&client=js"
    sockets, held = [], 0
    sem = asyncio.Semaphore(50)

    async def one():
        nonlocal held
        async with sem:
            ws = await connect(url, open_timeout=30)
            hello = json.loads(await ws.recv())
            socket_id = json.loads(hello["data"])["socket_id"]
            channel = f"private-thread-{uuid.uuid4()}"
            sig = hmac.new(SECRET.encode(), f"{socket_id}:{channel}".encode(), hashlib.sha256).hexdigest()
            subscribe = {"channel": channel, "auth": f"{KEY}:{sig}"}
            await ws.send(json.dumps({"event": "pusher:subscribe", "data": subscribe}))
            ok = json.loads(await ws.recv())
            if ok["event"] == "pusher_internal:subscription_succeeded":
                held += 1
            sockets.append(ws)

    rss_before = _rss_mb(server.proc.pid)
    started = time.perf_counter()
    results = await asyncio.gather(*[one() for _ in range(n)], return_exceptions=True)
    elapsed = time.perf_counter() - started
    await asyncio.sleep(1)
    alive = sum(1 for ws in sockets if ws.close_code is None)
    rss = _rss_mb(server.proc.pid)
    for ws in sockets:
        await ws.close()
    errors = [repr(r) for r in results if isinstance(r, Exception)][:3]
    return {"requested": n, "subscribed": held, "still_open_after_1s": alive, "connect_seconds": round(elapsed, 2),
            "server_rss_mb": round(rss, 1), "server_rss_delta_mb": round(rss - rss_before, 1), "errors": errors}


def event_latency(server: Server, messages: int) -> dict:
    if not shutil.which("node"):
        return {"skipped": "node not installed"}
    if not (JS / "node_modules" / "pusher-js").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=JS, check=True,
                       stdout=subprocess.DEVNULL)
    ws_id, secret = server.tenant()
    agent_file = Path(server.dir.name) / "agent.yaml"
    agent_file.write_text("name: rt\nmodel_class: scripted\ninstructions: ''\ntools: []\n")
    agent = cli(server.db_url, "agent", "create", "--workspace", ws_id, "--file", str(agent_file))["id"]
    h = {"Authorization": f"Bearer {secret}", "Service-Subject": "bench:rt"}
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        thread = http.post("/v1/loom/threads", json={"agent": agent}, headers=h).json()["data"]["id"]
        node = subprocess.Popen(["node", str(JS / "subscribe.mjs"), json.dumps({
            "key": KEY, "wsHost": "127.0.0.1", "wsPort": server.port,
            "authEndpoint": f"{server.base_url}/v1/loom/realtime/auth", "token": secret,
            "headers": {"Service-Subject": "bench:rt"}, "channels": [f"private-thread-{thread}"],
            "events": messages * 4, "timeoutMs": 60_000})], stdout=subprocess.PIPE, text=True)
        while json.loads(node.stdout.readline())["type"] != "subscribed":
            pass
        for i in range(messages):
            run_id = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": f"hi {i}"},
                               headers=h).json()["data"]["run_id"]
            while not http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]["terminal"]:
                time.sleep(0.01)
        latencies = []
        for line in node.stdout:
            item = json.loads(line)
            if item["type"] == "event" and item["event"] == "run.updated":
                committed = dt.datetime.fromisoformat(item["data"]["updated_at"].replace("Z", "+00:00"))
                latencies.append(item["t"] - committed.timestamp() * 1000)
            if item["type"] in ("timeout", "done"):
                break
        node.wait(10)
    return {"client": "pusher-js", "run_updated_events": len(latencies), **summary(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    _raise_fd_limit(args.subscribers * 2 + 256)
    with Server(HEDDLE_PUSHER_KEY=KEY, HEDDLE_PUSHER_SECRET=SECRET) as server:
        latency = event_latency(server, args.messages)
        idle = asyncio.run(idle_subscribers(server, args.subscribers))
    result = {"benchmark": "realtime", "idle": idle, "event_latency": latency}
    if args.json:
        print(json.dumps(result))
        return
    print(f"idle subscribers: {idle['subscribed']}/{idle['requested']} subscribed, "
          f"{idle['still_open_after_1s']} open after 1 s, server RSS {idle['server_rss_mb']} MB "
          f"(+{idle['server_rss_delta_mb']} MB)   (target: 1,000)")
    if "median_ms" in latency:
        print(f"commit -> pusher-js run.updated: median {latency['median_ms']} ms, p99 {latency['p99_ms']} ms "
              f"over {latency['n']} events   (target p99 < 50 ms)")
    else:
        print(f"event latency: {latency}")


if __name__ == "__main__":
    main()
