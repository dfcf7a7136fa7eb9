"""Model calls in flight, so that a cancelled run's call is abandoned at once.

A model call is awaited in its run's own task (no task of its own: a model that answers without
waiting then costs no event-loop turn; docs/decisions.md, "third pass"). While a task is inside
a call it is registered here by run; `nudge(run_id)` (a cancel, an erasure) reads the run's
state and, if it left `running`, cancels that task. There is no `await` between that check and
`task.cancel()`, so the task is still suspended inside the call, which is where its
`CancelledError` lands; `call()` then returns None and the task goes on (uncancelled).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import TypeVar

from sqlalchemy import bindparam, select

from heddle.db.base import Database
from heddle.loom.models import Run
from heddle.loom.states import RUNNING

T = TypeVar("T")

_STATE = select(Run.__table__.c.state).where(Run.__table__.c.id == bindparam("rid"))


class ModelCalls:
    def __init__(self, db: Database):
        self.db = db
        self._inside: dict[uuid.UUID, asyncio.Task] = {}  # exactly while the task is in the call
        self._abandoned: set[uuid.UUID] = set()

    async def call(self, run_id: uuid.UUID, model_call: Awaitable[T]) -> T | None:
        """The call's answer, or None if the run stopped meanwhile and the call was abandoned."""
        task = asyncio.current_task()
        assert task is not None
        self._inside[run_id] = task
        try:
            return await model_call
        except asyncio.CancelledError:
            if run_id not in self._abandoned:
                raise
            self._abandoned.discard(run_id)
            task.uncancel()  # handled here: later timeouts in this task work as usual
            return None
        finally:
            self._inside.pop(run_id, None)

    def nudge(self, run_id: uuid.UUID) -> None:
        """The run changed under its executor: abandon its model call if the run stopped."""
        if run_id in self._inside:
            asyncio.get_running_loop().create_task(self._abandon_if_stopped(run_id))

    async def _abandon_if_stopped(self, run_id: uuid.UUID) -> None:
        async with self.db.session() as session:
            state = await session.scalar(_STATE, {"rid": run_id})
        task = self._inside.get(run_id)
        if state != RUNNING and task is not None:  # no await between this check and cancel()
            self._abandoned.add(run_id)
            task.cancel()
