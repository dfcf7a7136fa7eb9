"""Schedules at scale (issue 45): N schedules due in the same second on PostgreSQL, fired by
`heddle worker` processes in queue mode (each polls for due schedules; claims are
`FOR UPDATE SKIP LOCKED`, heddle/loom/schedule_firing.py).

Each round uses a fresh database: N threads (one subject each, the scripted model), one one-off
schedule each, all due at the same second a few seconds after the workers are up. It waits
until every schedule has ended and every run it started has closed, then reports:

* exactly once: schedules fired (`runs == 1` each), scheduled messages, distinct schedule ids;
* spread: how many each worker fired (the message's `scheduled.fired_by`);
* lag from the due time to the run's start (the run row is created by the firing, in state
  `running`), p50 / p99 / max, and to the run's close;
* wall time from the due second until the last schedule fired.

Rounds with 1 worker and with 2 workers run back to back in one invocation, so the ratio of the
two is the figure to read (the machine is shared; absolute times move with its load, which is
printed at the start and end).

    python bench/schedules.py [--schedules 1000] [--poll 1.0] [--workers 1,2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import asyncpg

ADMIN = os.environ.get("HEDDLE_BENCH_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")


async def fresh_database() -> str:
    name = f"heddle_bench_sched_{secrets.token_hex(4)}"
    conn = await asyncpg.connect(ADMIN)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    base = ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{name}", name


async def drop_database(name: str) -> None:
    conn = await asyncpg.connect(ADMIN)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def seed(url: str, n: int, due: dt.datetime) -> str:
    """A workspace with credits, a scripted agent, N threads and one schedule each, due at `due`."""
    from heddle.billing import service as billing
    from heddle.db.base import Database, utcnow
    from heddle.db.migrate import upgrade
    from heddle.loom import agents
    from heddle.loom.agent_file import AgentFile
    from heddle.loom.models import Schedule, Thread
    from heddle.money import to_micro
    from heddle.workspaces import service as ws_service

    await upgrade(url)
    db = Database(url)
    try:
        async with db.transaction() as s:
            ws = await ws_service.create_workspace(s, "bench", 0)
            await billing.grant(s, ws.id, to_micro(100_000))
            key, _ = await ws_service.create_key(s, ws.id, "live")
            agent = await agents.create_agent(s, ws.id, AgentFile.model_validate(
                {"name": "bench", "model_class": "scripted", "instructions": ""}), ("scripted",))
            now = utcnow()
            threads = [Thread(id=uuid.uuid4(), workspace_id=ws.id, agent_id=agent.id, subject=f"web:b{i}",
                              created_at=now) for i in range(n)]
            s.add_all(threads)
            await s.flush()
            s.add_all([Schedule(id=uuid.uuid4(), workspace_id=ws.id, thread_id=t.id, subject=t.subject,
                                content="scheduled check", at=due, timezone="UTC", runs=0, state="active",
                                next_run_at=due, created_by="caller", auth_mode="relay", key_id=key.id,
                                created_at=now, updated_at=now) for t in threads])
        return ws.id
    finally:
        await db.dispose()


def start_worker(url: str, poll: float, channel: str, pusher: dict[str, str]) -> subprocess.Popen:
    env = {**os.environ, "HEDDLE_DATABASE_URL": url, "HEDDLE_EXECUTOR": "queue", "HEDDLE_EVENT_BUS": "postgres",
           "HEDDLE_EVENT_BUS_CHANNEL": channel, "HEDDLE_LOG_LEVEL": "WARNING", **pusher,
           "HEDDLE_SCHEDULE_POLL_SECONDS": str(poll), "HEDDLE_MIGRATE_ON_START": "false"}
    fd, port_file = tempfile.mkstemp(prefix="heddle-bench-port-")
    os.close(fd)
    log = open(f"{port_file}.log", "w")  # noqa: SIM115 (kept open by the child)
    return subprocess.Popen([sys.executable, "-m", "heddle", "worker", "--port", "0", "--port-file", port_file],
                            env=env, stdout=log, stderr=subprocess.STDOUT)


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def measure(url: str, n: int, due: dt.datetime, timeout: float) -> dict:
    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ended = await conn.fetchval("SELECT count(*) FROM schedules WHERE state = 'ended'")
            closed = await conn.fetchval("SELECT count(*) FROM runs WHERE state IN ('closed', 'failed')")
            if ended == n and closed >= n:
                break
            await asyncio.sleep(0.25)
        fired_once = await conn.fetchval("SELECT count(*) FROM schedules WHERE runs = 1")
        twice = await conn.fetchval("SELECT count(*) FROM schedules WHERE runs > 1")
        rows = await conn.fetch(
            "SELECT m.scheduled::text AS mark, r.created_at AS started, r.closed_at AS closed, r.state AS state "
            "FROM messages m JOIN runs r ON r.id = m.run_id WHERE m.scheduled IS NOT NULL "
            "AND m.scheduled::text <> 'null'")
    finally:
        await conn.close()
    marks = [json.loads(r["mark"]) for r in rows]
    by_worker: dict[str, int] = {}
    for m in marks:
        by_worker[m["fired_by"]] = by_worker.get(m["fired_by"], 0) + 1
    start_lag = [(r["started"] - due).total_seconds() for r in rows]
    close_lag = [(r["closed"] - due).total_seconds() for r in rows if r["closed"] is not None]
    return {
        "schedules": n, "fired_once": fired_once, "fired_more_than_once": twice, "scheduled_messages": len(marks),
        "distinct_schedules": len({m["schedule_id"] for m in marks}),
        "runs_closed": sum(r["state"] == "closed" for r in rows),
        "per_worker": sorted(by_worker.values(), reverse=True),
        "start_lag_p50": round(statistics.median(start_lag), 3) if start_lag else None,
        "start_lag_p99": round(pct(start_lag, 99), 3), "start_lag_max": round(max(start_lag, default=0), 3),
        "close_lag_p50": round(statistics.median(close_lag), 3) if close_lag else None,
        "close_lag_p99": round(pct(close_lag, 99), 3),
    }


async def one_round(n: int, workers: int, poll: float, lead: float, timeout: float) -> dict:
    url, name = await fresh_database()
    procs: list[subprocess.Popen] = []
    try:
        due = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=lead)).replace(microsecond=0)
        await seed(url, n, due)
        channel = f"heddle_bench_{secrets.token_hex(4)}"
        pusher = {"HEDDLE_PUSHER_APP_ID": "bench", "HEDDLE_PUSHER_KEY": secrets.token_hex(8),
                  "HEDDLE_PUSHER_SECRET": secrets.token_urlsafe(24)}  # shared, as across a deployment
        procs = [start_worker(url, poll, channel, pusher) for _ in range(workers)]
        if dt.datetime.now(dt.UTC) >= due:
            print(f"  (seeding took past the due time; raise --lead above {lead:g} s)", file=sys.stderr)
        result = {"workers": workers, **await measure(url, n, due, timeout)}
        dead = [p.args for p in procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a worker exited early (its output: the .log beside its port file): {dead}")
        return result
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        await drop_database(name)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--workers", default="1,2", help="worker counts, one round each, in this order")
    parser.add_argument("--poll", type=float, default=1.0, help="HEDDLE_SCHEDULE_POLL_SECONDS of the workers")
    parser.add_argument("--lead", type=float, default=20.0, help="seconds from seeding to the due second")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    results = [await one_round(args.schedules, int(w), args.poll, args.lead, args.timeout)
               for w in args.workers.split(",")]
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        print(f"{r['workers']} worker(s): {r['fired_once']}/{r['schedules']} fired once, {r['fired_more_than_once']} "
              f"more than once, {r['scheduled_messages']} messages ({r['distinct_schedules']} schedules), "
              f"{r['runs_closed']} runs closed; per worker {r['per_worker']}; due->run start p50 "
              f"{r['start_lag_p50']} s p99 {r['start_lag_p99']} s max {r['start_lag_max']} s; due->closed p50 "
              f"{r['close_lag_p50']} s p99 {r['close_lag_p99']} s")
    if len(results) >= 2 and results[0]["start_lag_p99"]:
        base, last = results[0], results[-1]
        print(f"ratio {last['workers']} workers / {base['workers']}: start lag p99 "
              f"{last['start_lag_p99'] / base['start_lag_p99']:.2f}, closed p99 "
              f"{last['close_lag_p99'] / base['close_lag_p99']:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
