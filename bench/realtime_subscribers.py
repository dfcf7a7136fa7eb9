"""Realtime, built-in server: idle subscribers one process holds, and publish -> receive latency.

1. Starts the built-in Pusher-protocol server in this process (the hub and router under uvicorn
   on a free loopback port).
2. Connects N idle subscribers (Python `websockets`, at most 100 handshakes at a time), each
   subscribing to its own `private-thread-<uuid>` channel with a valid signature, and reports
   how many the server holds and the process RSS before and after. Server and clients share
   this process, so the RSS covers both ends of every connection.
3. Publishes M events, one at a time, to one subscriber's channel and reports the time from
   `hub.publish()` to the frame being decoded by that subscriber (median and p99).

Bounded: the whole run stops after `--timeout` seconds.

    python bench/realtime_subscribers.py [--subscribers 1000] [--events 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from websockets.asyncio.client import ClientConnection, connect

sys.path.insert(0, str(Path(__file__).parent))
from common import free_port, summary  # noqa: E402

from heddle.realtime.hub import RealtimeHub  # noqa: E402
from heddle.realtime.server import build_realtime_router  # noqa: E402
from heddle.realtime.signing import channel_auth  # noqa: E402

KEY, SECRET = "bench-key", f"bench-secret-{uuid.uuid4().hex}"
CONNECT_CONCURRENCY = 100


def rss_mb() -> float:
    """Current resident set size (Linux), else the peak the OS reports."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def raise_fd_limit(wanted: int) -> int:
    """Raise the soft open-files limit towards `wanted` (never above the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if ceiling > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
        return ceiling
    return soft


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # the benchmark owns the process's signals
        yield


@contextlib.asynccontextmanager
async def serve(hub: RealtimeHub) -> AsyncIterator[int]:
    app = FastAPI()
    app.include_router(build_realtime_router(hub, app_key=KEY, app_secret=SECRET))
    port = free_port()
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=port, ws="websockets-sansio", lifespan="off",
                                    log_level="warning", access_log=False, timeout_graceful_shutdown=5))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped during start-up")
            await asyncio.sleep(0.01)
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)


async def subscribe(port: int, channel: str) -> ClientConnection:
    ws = await connect(f"ws://127.0.0.1:{port}/app/{KEY}?protocol=7&client=js&version=bench", open_timeout=30)
    hello = json.loads(await ws.recv())
    socket_id = json.loads(hello["data"])["socket_id"]
    auth = channel_auth(KEY, SECRET, socket_id, channel)
    await ws.send(json.dumps({"event": "pusher:subscribe", "data": {"channel": channel, "auth": auth}}))
    reply = json.loads(await ws.recv())
    if reply["event"] != "pusher_internal:subscription_succeeded":
        await ws.close()
        raise RuntimeError(f"subscription refused: {reply}")
    return ws


async def run(n_subscribers: int, n_events: int, *, timeout: float = 300) -> dict:
    """Hold `n_subscribers` idle subscribers, then time `n_events` publishes to one of them."""
    if n_subscribers < 1 or n_events < 1:
        raise ValueError("n_subscribers and n_events must be at least 1")
    fd_limit = raise_fd_limit(2 * n_subscribers + 256)  # both ends of each connection live here
    hub = RealtimeHub(max_connections=n_subscribers)
    sockets: list[tuple[ClientConnection, str]] = []
    failures: dict[str, int] = {}
    latencies: list[float] = []
    async with asyncio.timeout(timeout), serve(hub) as port:
        rss_before = rss_mb()
        gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
        channels = [f"private-thread-{uuid.uuid4()}" for _ in range(n_subscribers)]

        async def one(channel: str) -> None:
            async with gate:
                try:
                    sockets.append((await subscribe(port, channel), channel))
                except Exception as exc:
                    failures[type(exc).__name__] = failures.get(type(exc).__name__, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(one(channel) for channel in channels))
        connect_seconds = time.perf_counter() - started
        held, subscribed_channels = hub.connection_count, hub.channel_count
        rss_after = rss_mb()

        if sockets:
            probe, channel = sockets[0]
            for i in range(n_events):
                sent = time.perf_counter()
                await hub.publish(channel, "run.updated", {"i": i, "state": "running"})
                frame = json.loads(await asyncio.wait_for(probe.recv(), 10))
                json.loads(frame["data"])
                latencies.append((time.perf_counter() - sent) * 1000)

        gate = asyncio.Semaphore(CONNECT_CONCURRENCY)

        async def close(ws: ClientConnection) -> None:
            async with gate:
                await ws.close()

        await asyncio.gather(*(close(ws) for ws, _ in sockets), return_exceptions=True)
        await hub.aclose()
    return {
        "benchmark": "realtime_subscribers",
        "subscribers_requested": n_subscribers,
        "subscribers_held": held,
        "channels_subscribed": subscribed_channels,
        "connect_failures": failures,
        "connect_seconds": round(connect_seconds, 3),
        "fd_limit": fd_limit,
        "rss_mb_before": round(rss_before, 1),
        "rss_mb_after": round(rss_after, 1),
        "rss_kb_per_subscriber": round((rss_after - rss_before) * 1024 / max(held, 1), 1),
        "publish_to_receive": summary(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    result = asyncio.run(run(args.subscribers, args.events, timeout=args.timeout))
    if args.json:
        print(json.dumps(result))
        return
    print(f"subscribers held: {result['subscribers_held']}/{result['subscribers_requested']} "
          f"(connect failures: {result['connect_failures'] or 'none'}) in {result['connect_seconds']} s")
    print(f"process RSS: {result['rss_mb_before']} MB -> {result['rss_mb_after']} MB "
          f"({result['rss_kb_per_subscriber']} kB per subscriber, server and client ends together)")
    latency = result["publish_to_receive"]
    print(f"publish -> receive over {latency.get('n', 0)} events: median {latency.get('median_ms')} ms, "
          f"p99 {latency.get('p99_ms')} ms")


if __name__ == "__main__":
    main()
