"""The worker takes jobs several at a time (heddle/worker/fetching.py), on real PostgreSQL.

procrastinate's own App, connector, schema and `fetch_job` on a fresh database; only the loop
that fetches is ours. Each test counts the real fetch round trips (a spy that calls through) and
checks what matters to a run: every job executed exactly once, none left `doing`.
"""

from __future__ import annotations

import asyncio
import time

import pytest

pytestmark = pytest.mark.postgres

procrastinate = pytest.importorskip("procrastinate")

from heddle.realtime.bus import postgres_dsn  # noqa: E402
from heddle.worker.fetching import FETCH_BATCH, BatchFetchingWorker  # noqa: E402


class Spy:
    """Calls the real `fetch_job`, noting when each call ran; `fail_on` makes that call raise."""

    def __init__(self, manager, fail_on: int | None = None):
        self.real, self.fail_on = manager.fetch_job, fail_on
        self.calls: list[tuple[float, float, int | None]] = []
        self.started = 0
        manager.fetch_job = self

    async def __call__(self, queues, worker_id):
        start = time.monotonic()
        self.started += 1
        if self.started == self.fail_on:
            self.calls.append((start, time.monotonic(), None))
            raise procrastinate.exceptions.ConnectorException("the database went away")
        job = await self.real(queues=queues, worker_id=worker_id)
        self.calls.append((start, time.monotonic(), job.id if job else None))
        return job

    def most_at_once(self) -> int:
        return max(sum(1 for s, e, _ in self.calls if s <= t < e) for t, _, _ in self.calls)


@pytest.fixture
async def queue(pg_url):
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=postgres_dsn(pg_url),
                                                                     min_size=2, max_size=2 + FETCH_BATCH))
    ran: list[int] = []

    @app.task(name="t.record", queue="q", pass_context=True)
    async def record(context, n: int) -> None:
        ran.append(n)
        await asyncio.sleep(0.05)  # a job that takes a while: the slots stay taken

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        yield app, record, ran


def worker(app, **options) -> BatchFetchingWorker:
    return BatchFetchingWorker(app=app, queues=["q"], concurrency=options.pop("concurrency", 50),
                               install_signal_handlers=False, delete_jobs="never", **options)


async def statuses(app) -> dict[str, int]:
    counts: dict[str, int] = {}
    for job in await app.job_manager.list_jobs_async(queue="q"):
        counts[job.status] = counts.get(job.status, 0) + 1
    return counts


async def test_a_queue_found_full_is_taken_a_batch_at_a_time_each_job_once(queue):
    app, record, ran = queue
    await record.batch_defer_async(*({"n": n} for n in range(30)))  # before the worker: none announced to it
    w = worker(app, wait=False)
    spy = Spy(app.job_manager)
    await asyncio.wait_for(w.run(), 60)
    assert sorted(ran) == list(range(30))  # each once
    assert await statuses(app) == {"succeeded": 30}
    taken = [job for _, _, job in spy.calls if job is not None]
    assert len(taken) == len(set(taken)) == 30
    # Nothing was announced to it: one, then twice as many while they come back full, up to
    # the batch: 1 + 2 + 4 + 8 + 8 + 8 (7 found), a batch's fetches at the same time.
    assert FETCH_BATCH == 8
    assert [len([c for c in spy.calls if c[2] is not None])] == [30] and len(spy.calls) == 31
    assert spy.most_at_once() == FETCH_BATCH


async def test_announced_jobs_are_taken_together_and_no_more_are_asked_for(queue):
    app, record, ran = queue
    w = worker(app)
    spy = Spy(app.job_manager)
    running = asyncio.create_task(w.run())
    try:
        await asyncio.sleep(0.5)  # listening
        await record.batch_defer_async(*({"n": n} for n in range(5)))  # one commit: five announcements
        for _ in range(200):
            if len(ran) == 5 and (await statuses(app)).get("succeeded") == 5:
                break
            await asyncio.sleep(0.05)
    finally:
        w.stop()
        await asyncio.wait_for(running, 30)
    assert sorted(ran) == list(range(5))
    assert await statuses(app) == {"succeeded": 5}
    assert spy.most_at_once() >= 2  # taken together, not one round trip after another
    # the announcements bound the batch: at most the five, and one more that found none
    assert len([c for c in spy.calls if c[2] is not None]) == 5
    assert len(spy.calls) <= 6 + 1  # (+1: the start-up fetch, before anything was deferred)


async def test_a_fetch_that_fails_fails_the_loop_and_loses_no_job(queue):
    app, record, ran = queue
    await record.batch_defer_async(*({"n": n} for n in range(12)))
    w = worker(app, wait=False)
    spy = Spy(app.job_manager, fail_on=6)  # in the third fetch, of four (calls 4-7)
    with pytest.raises(procrastinate.exceptions.ConnectorException):
        await asyncio.wait_for(w.run(), 60)
    taken = {job for _, _, job in spy.calls if job is not None}
    # The jobs the other fetches of that batch took were executed to the end (graceful
    # shutdown waits for them); the rest are still waiting for a worker, none stuck `doing`.
    assert len(ran) == len(taken) == 1 + 2 + 3
    assert await statuses(app) == {"succeeded": len(taken), "todo": 12 - len(taken)}
