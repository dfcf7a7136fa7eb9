"""procrastinate's worker, taking the jobs a wake-up finds several at a time.

procrastinate's loop (`Worker._fetch_and_process_jobs`) takes one job per round trip, and
between two round trips it waits for turns of the event loop that the running jobs share. On a
busy worker that was about 18 ms a job (5.6 ms for the query, 12.9 between queries, median), a
ceiling of about 54 jobs a second: when 100 conversations' messages came together, the last
run waited up to 1.9 s in the queue, and half of them over 0.5 s, while the worker used half
a core. Here a wake-up takes as many jobs at once as there are free slots and announced jobs,
at most `FETCH_BATCH`: that many concurrent `fetch_job` calls (procrastinate's own query,
`FOR UPDATE SKIP LOCKED`, so concurrent calls take distinct jobs), each on a connection of the
queue's pool, and starts them in one turn.

Everything else is procrastinate's: the notification listener, the poll, the job's execution,
its status, heartbeats, graceful shutdown. `_start` is procrastinate 3's job start (a
`JobContext`, a task, a slot released when it ends); the version is pinned below 4 in
pyproject.toml because this overrides a private method, and tests/workers run it against the
installed procrastinate.
"""

from __future__ import annotations

import asyncio
import time

from procrastinate import job_context, jobs, utils
from procrastinate import worker as procrastinate_worker

FETCH_BATCH = 8  # jobs taken per round trip at most; the queue pool has this many connections spare


class BatchFetchingWorker(procrastinate_worker.Worker):
    def __init__(self, *args, fetch_batch: int = FETCH_BATCH, **kwargs):
        super().__init__(*args, **kwargs)
        self.fetch_batch = fetch_batch
        self._announced = 0  # jobs announced (NOTIFY) since the last fetch

    async def _handle_notification(self, *, channel: str, notification: jobs.Notification):
        if notification["type"] == "job_inserted":
            self._announced += 1
        await super()._handle_notification(channel=channel, notification=notification)

    async def _fetch_and_process_jobs(self) -> None:
        """Fetch and start jobs until a fetch finds the queue empty or the worker stops.

        A fetch asks for the jobs announced since the last one (within the batch and the free
        slots), or for one when none were. A fetch that came back full with jobs nobody
        announced (a queue found full at start-up, jobs put back by a retry) doubles the next
        ask, up to the batch: a backlog is taken 1, 2, 4, 8, 8… at a time.
        """
        probe = 1
        while not self._stop_event.is_set():
            if self._job_semaphore.locked():  # every slot taken: wait for one, or for the stop
                first_slot = asyncio.ensure_future(self._job_semaphore.acquire())
                await utils.wait_any(first_slot, self._stop_event.wait())
                if self._stop_event.is_set():
                    if first_slot.done() and not first_slot.cancelled():
                        self._job_semaphore.release()
                    return
            else:  # a slot is free: taken at once, without the tasks and turns of a wait
                await self._job_semaphore.acquire()
            announced = self._announced
            slots, wanted = 1, min(self.fetch_batch, max(announced, probe))
            while slots < wanted and not self._job_semaphore.locked():
                await self._job_semaphore.acquire()  # free: returns at once
                slots += 1
            self._announced = max(0, self._announced - slots)
            self._new_job_event.clear()
            assert self.worker_id is not None
            found = await asyncio.gather(*(self.app.job_manager.fetch_job(queues=self.queues,
                                                                          worker_id=self.worker_id)
                                           for _ in range(slots)), return_exceptions=True)
            taken = [job for job in found if isinstance(job, jobs.Job)]
            for _ in range(slots - len(taken)):
                self._job_semaphore.release()
            for job in taken:  # a job taken is started even if another fetch failed
                self._start(job)
            failure = next((f for f in found if isinstance(f, BaseException)), None)
            if failure is not None:
                raise failure  # as procrastinate's loop: the database is away
            if len(taken) < slots:
                return  # the queue is empty for now: wait for the next announcement or poll
            if slots > announced:
                probe = min(self.fetch_batch, 2 * slots)

    def _start(self, job: jobs.Job) -> None:
        context = job_context.JobContext(
            app=self.app, worker_name=self.worker_name, worker_queues=self.queues,
            additional_context=self.additional_context.copy() if self.additional_context else {},
            job=job, abort_reason=lambda job_id=job.id: self._job_ids_to_abort.get(job_id) if job_id else None,
            start_timestamp=time.time())
        task = asyncio.create_task(self._process_job(context), name=f"process job {job.task_name}[{job.id}]")
        self._running_jobs[task] = context

        def on_job_complete(task: asyncio.Task) -> None:
            del self._running_jobs[task]
            self._job_semaphore.release()

        task.add_done_callback(on_job_complete)
