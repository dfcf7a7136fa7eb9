"""A model call is awaited in its run's task; a cancel abandons it only if the run stopped.

On a real server's event loop and database: a call of a run still `running` is left alone by
`nudge()`; one whose run stopped is abandoned (`call()` gives None and the task goes on, not
cancelled); a cancel that is not an abandonment propagates as usual. The HTTP path (a cancel
during a slow model call) is in tests/run_control/test_cancel.py.
"""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import update

from heddle.db.base import utcnow
from heddle.loom.models import Run
from support.loom import open_thread

AGENT = {"name": "calls", "model_class": "scripted", "instructions": "", "tools": []}


def _running_run(http, tenant, subject: str) -> uuid.UUID:
    agent = tenant.add_agent({**AGENT, "name": subject.replace(":", "-")})
    thread = uuid.UUID(open_thread(http, tenant.headers(subject), agent))
    run_id = uuid.uuid4()

    async def insert(s):
        now = utcnow()
        s.add(Run(id=run_id, thread_id=thread, workspace_id=tenant.workspace_id, agent_id=agent, agent_version=1,
                  subject=subject, state="running", auth_mode="relay", cost_micro=0, turn_count=0,
                  opened_at=now, created_at=now, updated_at=now))

    tenant.run(insert)
    return run_id


async def _nudged(calls, run_id: uuid.UUID, *, stop_first: bool, db):
    """Start a call that waits on a future, nudge it, and report what became of it."""
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(calls.call(run_id, answer))
    await asyncio.sleep(0)  # the task is inside the call now
    if stop_first:
        async with db.transaction() as s:
            await s.execute(update(Run).where(Run.id == run_id).values(state="failed"))
    calls.nudge(run_id)
    await asyncio.sleep(0.2)  # the nudge reads the run's state
    if not task.done():
        answer.set_result("the answer")
    result = await task
    return result, task.cancelling()


def test_a_call_of_a_running_run_is_not_abandoned(http, tenant):
    server = tenant.server
    calls = server.services.executor.engine.model_calls
    run_id = _running_run(http, tenant, "web:calls-running")
    result, cancelling = server.call(_nudged(calls, run_id, stop_first=False, db=server.services.database()))
    assert result == "the answer" and cancelling == 0


def test_a_call_of_a_stopped_run_is_abandoned_and_the_task_goes_on(http, tenant):
    server = tenant.server
    calls = server.services.executor.engine.model_calls
    run_id = _running_run(http, tenant, "web:calls-stopped")
    result, cancelling = server.call(_nudged(calls, run_id, stop_first=True, db=server.services.database()))
    assert result is None  # abandoned, not answered
    assert cancelling == 0  # uncancelled: a later timeout in the task works as usual


def test_any_other_cancel_propagates(tenant):
    server = tenant.server
    calls = server.services.executor.engine.model_calls

    async def scenario():
        never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(calls.call(uuid.uuid4(), never))
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        return "not cancelled"

    assert server.call(scenario()) == "cancelled"
