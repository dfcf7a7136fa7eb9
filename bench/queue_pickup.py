"""How fast a worker takes queued jobs: procrastinate's own loop against Heddle's batches.

`heddle worker` runs procrastinate's worker with its fetch loop replaced
(heddle/worker/fetching.py: the jobs a wake-up finds, taken several at a time). This measures
the two loops side by side in one process, on a fresh PostgreSQL database, with procrastinate's
App, schema and `fetch_job`; only the loop differs. Each job records when it started and
returns at once.

* `backlog`: `--jobs` jobs already queued when the worker starts (a restart, a retried
  batch): time until the last one started, and jobs per second;
* `burst`: the worker running, `--jobs` jobs enqueued in separate transactions as fast as
  one connection commits them (100 conversations' messages arriving together): each job's
  wait from its enqueue to its start, median and p95.

Both with the event loop busy as a loaded worker's is (`--busy-ms`: a task that holds the loop
that long, then yields, over and over: the turns that running jobs take in between), and idle
(`--busy-ms 0`). Rounds alternate the two loops; figures compare within a run.

    python bench/queue_pickup.py [--jobs 200] [--rounds 3] [--busy-ms 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import procrastinate  # noqa: E402
from procrastinate import worker as procrastinate_worker  # noqa: E402
from scale_queue import PG_ADMIN, _admin  # noqa: E402

from heddle.worker.fetching import FETCH_BATCH, BatchFetchingWorker  # noqa: E402

LOOPS = {"procrastinate": procrastinate_worker.Worker, "heddle batches": BatchFetchingWorker}


async def _busy(stop: asyncio.Event, ms: float) -> None:
    """Hold the loop `ms` at a time, then yield: a loop that other work keeps busy."""
    while ms and not stop.is_set():
        until = time.perf_counter() + ms / 1000
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(0)


class Queue:
    def __init__(self, dsn: str):
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector(
            conninfo=dsn, min_size=4, max_size=4 + FETCH_BATCH))
        self.started: dict[int, float] = {}

        @self.app.task(name="bench.job", queue="bench", pass_context=False)
        async def job(n: int) -> None:
            self.started[n] = time.monotonic()

        self.task = job

    def worker(self, loop: str, *, wait: bool):
        return LOOPS[loop](app=self.app, queues=["bench"], concurrency=400, wait=wait,
                           install_signal_handlers=False, delete_jobs="successful")


async def backlog(q: Queue, loop: str, jobs: int, busy_ms: float) -> dict:
    q.started.clear()
    await q.task.batch_defer_async(*({"n": n} for n in range(jobs)))
    stop = asyncio.Event()
    load = asyncio.create_task(_busy(stop, busy_ms))
    start = time.monotonic()
    await q.worker(loop, wait=False).run()
    stop.set()
    await load
    took = max(q.started.values()) - start
    assert len(q.started) == jobs, f"{len(q.started)} of {jobs} jobs ran"
    return {"seconds": round(took, 3), "jobs_per_s": round(jobs / took, 1)}


async def burst(q: Queue, loop: str, jobs: int, busy_ms: float) -> dict:
    q.started.clear()
    w = q.worker(loop, wait=True)
    running = asyncio.create_task(w.run())
    await asyncio.sleep(0.5)  # listening
    stop = asyncio.Event()
    load = asyncio.create_task(_busy(stop, busy_ms))
    enqueued: dict[int, float] = {}
    for n in range(jobs):  # one transaction (and one announcement) each
        await q.task.defer_async(n=n)
        enqueued[n] = time.monotonic()
    deadline = time.monotonic() + 60
    while len(q.started) < jobs and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    stop.set()
    await load
    w.stop()
    await running
    assert len(q.started) == jobs, f"{len(q.started)} of {jobs} jobs ran"
    waits = sorted(1000 * (q.started[n] - enqueued[n]) for n in range(jobs))
    return {"wait_median_ms": round(statistics.median(waits), 1), "wait_p95_ms": round(waits[int(0.95 * jobs)], 1)}


async def main(args) -> list[dict]:
    name = f"heddle_bench_{secrets.token_hex(5)}"
    await _admin(f'CREATE DATABASE "{name}"')
    rows = []
    try:
        q = Queue(f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}")
        async with q.app.open_async():
            await q.app.schema_manager.apply_schema_async()
            for busy in sorted({0.0, args.busy_ms}):
                for r in range(args.rounds):
                    for loop in LOOPS:
                        row = {"loop": loop, "busy_ms": busy, "round": r + 1,
                               **await backlog(q, loop, args.jobs, busy), **await burst(q, loop, args.jobs, busy)}
                        print(json.dumps(row), file=sys.stderr, flush=True)
                        rows.append(row)
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return rows


def table(rows: list[dict]) -> None:
    print(f"{'loop':>16} {'busy ms':>7} {'backlog s':>9} {'jobs/s':>8} {'burst wait med ms':>17} {'p95 ms':>8}")
    for busy in sorted({r["busy_ms"] for r in rows}):
        for loop in LOOPS:
            mine = [r for r in rows if r["loop"] == loop and r["busy_ms"] == busy]

            def med(key: str, mine: list[dict] = mine) -> float:
                return statistics.median(r[key] for r in mine)

            print(f"{loop:>16} {busy:>7} {med('seconds'):>9.3f} {med('jobs_per_s'):>8.1f} "
                  f"{med('wait_median_ms'):>17.1f} {med('wait_p95_ms'):>8.1f}")
    print("Medians over the rounds. Backlog: jobs queued before the worker starts, until the last "
          "started. Burst: jobs enqueued one transaction each while the worker runs, enqueue -> start.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy-ms", type=float, default=5.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main(args))
    print(json.dumps(result) if args.json else "", end="")
    if not args.json:
        table(result)
