"""Following one run's stored events until it settles, for the AG-UI and A2A streams.

`FollowedRun` is loom/sse.py's `RunEventStream` (the same reads of the run's event log, woken by
the same in-process signals, the shared bus and the polls, so it works in the embedded and the
PostgreSQL layout alike, a worker running the run) that hands out the events themselves, in
batches, instead of Heddle's SSE frames, and ends at the run's first settled `run.updated`
after `after` (closed, failed, or waiting for the caller: what a protocol request waits for).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import func, select
from starlette.requests import Request

from heddle.api.deps import services
from heddle.loom.models import RunEventRow
from heddle.loom.run_event import RunEvent
from heddle.loom.sse import RunEventStream
from heddle.runs_vocabulary import RUN_UPDATED, SETTLED

HEARTBEAT = ": heartbeat\n\n"


def settles(event: RunEvent, after: int) -> bool:
    """The `run.updated` that ends a protocol request: settled, and newer than the request's start."""
    return event.name == RUN_UPDATED and (event.seq or 0) > after and event.payload.get("state") in SETTLED


class FollowedRun(RunEventStream):
    _MARK = ""  # RunEventStream yields what `_frames` appended, joined: a batch is ready

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.after = self.cursor
        self._inbox: list[RunEvent] = []
        # Wake-ups with news so far: a read of the log (the first is the stream's own start),
        # or events handed over without one (a commit of this process numbers them for its
        # streams, loom/event_signals.py `watched`). Either way something of the run was committed.
        self.reads = 0

    async def _read(self):
        self.reads += 1
        return await super()._read()

    def _handed(self) -> None:
        self.reads += 1

    def _frames(self, rows: list[RunEvent], out: list[str]) -> bool:
        ends = False
        for event in rows:
            self._inbox.append(event)
            self.cursor = event.seq
            if settles(event, self.after):
                ends = True
                break
        if rows:
            out.append(self._MARK)
        return ends

    async def batches(self) -> AsyncIterator[list[RunEvent] | None]:
        """The run's events after `after`, in order, a batch per wake-up (None: a heartbeat is due)."""
        async for chunk in self.events():
            if chunk.startswith(":"):
                yield None
            elif not chunk.startswith("retry:"):
                batch, self._inbox = self._inbox, []
                yield batch


def follow_run(request: Request, run_id: uuid.UUID, after: int) -> FollowedRun:
    """The run's events after `after`, for a stream of this request's process."""
    svc = services(request)
    return FollowedRun(svc.database(), svc.run_events.signals, run_id, after,
                       heartbeat_seconds=svc.settings.sse_heartbeat_seconds, poll_seconds=svc.settings.sse_poll_seconds)


async def last_seq(session, run_id: uuid.UUID) -> int:
    """The seq of the run's last stored event (0: none): where a request's stream starts."""
    return int(await session.scalar(select(func.coalesce(func.max(RunEventRow.seq), 0))
                                    .where(RunEventRow.run_id == run_id)))
