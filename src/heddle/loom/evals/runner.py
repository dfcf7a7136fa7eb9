"""Running an eval's cases through the real engine.

Each case opens a fresh thread for a fresh test subject (`eval:<hex>`), posts its user messages
in order with runs of origin `eval` executing the version under test, and waits for each run
to settle before the next message: the in-process executor of the calling process runs them, or
the workers when the server is configured for a queue (HEDDLE_EXECUTOR=queue). A run that fails,
awaits an outcome, or awaits input with no message left ends the case there; its expectations
decide, and the eval goes on with the other cases. `concurrency` cases run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import select

from heddle.auth.context import AuthContext
from heddle.auth.relay import workspace_info
from heddle.db.base import Database
from heddle.errors import HeddleError
from heddle.loom import service
from heddle.loom.evals.dataset import Case
from heddle.loom.evals.expectations import Outcome
from heddle.loom.event_signals import RunEventSignals
from heddle.loom.models import Message, Run, ToolCall
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.money import to_credits
from heddle.runs_vocabulary import AWAITING_INPUT, CLOSED, ORIGIN_EVAL, SETTLED
from heddle.workspaces.models import Workspace

POLL_SECONDS = 0.25  # with no wake-up (another process's commit without a shared bus)
CASE_TIMEOUT_SECONDS = 120.0
# What a case's judge is given: the case and its outcome; it sets `outcome.judge`.
JudgeCall = Callable[[Case, Outcome], Awaitable[None]]


@dataclass(frozen=True)
class Target:
    workspace_id: str
    agent_id: str
    version: int


async def _settled(db: Database, signals: RunEventSignals | None, run_id: str, deadline: float) -> str:
    """The run's state once it settles (or at the deadline): woken by this process's commits of
    the run's events (the executor here) or the shared bus (workers), and polling meanwhile."""
    rid = uuid.UUID(run_id)
    waiter = signals.subscribe(rid) if signals is not None else None
    try:
        while True:
            if waiter is not None:
                waiter.event.clear()  # before the read: a commit after it wakes the wait below
            async with db.session() as session:
                state = await session.scalar(select(Run.state).where(Run.id == rid))
            left = deadline - time.monotonic()
            if state in SETTLED or left <= 0:
                return state
            if waiter is None:
                await asyncio.sleep(POLL_SECONDS)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.event.wait(), min(left, POLL_SECONDS))
    finally:
        if waiter is not None:
            signals.unsubscribe(rid, waiter)


async def _read_outcome(db: Database, thread_id: uuid.UUID, outcome: Outcome) -> None:
    async with db.session() as session:
        runs = list(await session.execute(select(Run.id, Run.state, Run.cost_micro, Run.error_code)
                                          .where(Run.thread_id == thread_id).order_by(Run.created_at, Run.id)))
        outcome.answers = list(await session.scalars(select(Message.content).where(
            Message.thread_id == thread_id, Message.role == "assistant").order_by(Message.seq)))
        run_ids = [r.id for r in runs]
        calls = await session.execute(select(ToolCall.run_id, ToolCall.name).where(ToolCall.run_id.in_(run_ids))
                                      .order_by(ToolCall.seq)) if run_ids else []
        by_run: dict[uuid.UUID, list[str]] = {}
        for run_id, name in calls:
            by_run.setdefault(run_id, []).append(name)
    outcome.run_ids = [str(r) for r in run_ids]
    outcome.tools = [name for r in run_ids for name in by_run.get(r, [])]
    outcome.credits = float(to_credits(sum(r.cost_micro or 0 for r in runs)))
    if runs:
        outcome.last_state = runs[-1].state
        outcome.error = outcome.error or runs[-1].error_code


async def run_case(db: Database, uow: RunUnitOfWork, auth_of: Callable[[str], AuthContext], target: Target,
                   case: Case, *, timeout: float = CASE_TIMEOUT_SECONDS,
                   signals: RunEventSignals | None = None) -> Outcome:
    """One case in a fresh thread of a fresh test subject; its Outcome."""
    outcome = Outcome()
    started = time.monotonic()
    deadline = started + timeout
    auth = auth_of(f"eval:{uuid.uuid4().hex}")
    realtime = auth.workspace.realtime_enabled
    async with uow.transaction(realtime=realtime, workspace_id=target.workspace_id) as work:
        thread, _created = await service.open_thread(work.session, auth, target.agent_id)
    for number, content in enumerate(case.messages, start=1):
        try:
            async with uow.transaction(realtime=realtime, workspace_id=target.workspace_id) as work:
                accepted = await service.post_message(work, auth, thread["id"], content, origin=ORIGIN_EVAL,
                                                      agent_version=target.version)
        except HeddleError as e:
            outcome.error = f"{e.code}: message {number} refused: {e.message}"
            break
        state = await _settled(db, signals, accepted["run_id"], deadline)
        if state not in SETTLED:
            outcome.error = f"timeout: the run was still {state} after {timeout:g}s"
            break
        more = number < len(case.messages)
        if not more or state not in (CLOSED, AWAITING_INPUT):
            break
    await _read_outcome(db, uuid.UUID(thread["id"]), outcome)
    outcome.latency_ms = round((time.monotonic() - started) * 1000, 1)
    return outcome


async def run(db: Database, uow: RunUnitOfWork, target: Target, cases: list[Case], *, concurrency: int,
              judge: JudgeCall | None = None, timeout: float = CASE_TIMEOUT_SECONDS,
              signals: RunEventSignals | None = None) -> list[Outcome]:
    """Every case's Outcome, in the dataset's order, `concurrency` cases at once."""
    async with db.session() as session:
        ws = await session.get(Workspace, target.workspace_id)
    if ws is None:
        raise HeddleError("not_found", f"No workspace {target.workspace_id!r}.")
    info = workspace_info(ws)

    def auth_of(subject: str) -> AuthContext:
        # Relay mode without a key: the runs and their ledger rows name no API key.
        return AuthContext(mode="relay", workspace=info, key_id=None, key_mode="test", subject=subject)

    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(case: Case) -> Outcome:
        async with gate:
            try:
                outcome = await run_case(db, uow, auth_of, target, case, timeout=timeout, signals=signals)
            except Exception as e:  # noqa: BLE001 - one case's crash is its own failure, the eval goes on
                outcome = Outcome(error=f"internal_error: {type(e).__name__}: {e}")
            if judge is not None and "judge" in case.expect:
                await judge(case, outcome)
            return outcome

    return list(await asyncio.gather(*(one(case) for case in cases)))
