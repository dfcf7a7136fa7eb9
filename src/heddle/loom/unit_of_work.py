"""The run unit of work: the only way to change a run or a tool call.

A `RunWork` is one transaction that changes runs: it moves runs and tool calls by the events
of the two tables in heddle/loom/states.py (nothing else writes `runs.state` or
`tool_calls.status`; tests/loom/test_unit_of_work.py checks the source for it), inserts new
runs and tool calls in an initial state, and records the events the change causes.

A unit of work ends itself: whoever opens it writes `async with ... as work:`, calls the
service, and leaves the block. Leaving it stages the recorded events (and the webhook
deliveries they owe) in the transaction, takes the charges left for last, commits, and only
then runs the hooks registered at start-up (SSE wake-ups, the realtime publish, the webhook
dispatcher's wake-up, the executor's submit), so no effect ever describes a change that was
rolled back. An exception leaving the block rolls everything back and runs no hook. No route
or service stages, commits or runs the hooks itself (tests/architecture checks the source).

Two ways in:
- `async with uow.transaction(fence=...) as work:` opens its own transaction (the engine, the
  retention pruner). With `fence` (heddle/loom/lease.py) every write also requires that this
  executor still holds the run: `work.hold()` renews the lease and carries the step's other
  columns in the same UPDATE, so a fenced move costs no extra round trip.
- `async with uow.joined(session, finish=...) as work:` in a request's own write session
  (heddle/loom/write_request.py): `finish` commits it together with the request's
  Idempotency-Key record.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel
from sqlalchemy import and_, bindparam, case, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from heddle.billing import service as billing
from heddle.db import dialect
from heddle.db.base import Database, utcnow
from heddle.loom import event_outbox, run_event
from heddle.loom.channels import EventSink
from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.run_event import RunEvent
from heddle.loom.states import (
    CALL_INITIAL,
    CALL_PENDING,
    CANCELLED,
    FAILED,
    RUN_INITIAL,
    RUNNING,
    InvalidCallTransition,
    InvalidTransition,
    StaleExecutor,
    next_call_status,
    transition_values,
)
from heddle.timeutil import iso
from heddle.webhooks import run_rule
from heddle.webhooks.outbox import has_endpoint_of
from heddle.workspaces.models import Workspace

_INSERT_RUN = insert(Run.__table__)
_INSERT_TOOL_CALL = insert(ToolCall.__table__)
_HAS_ENDPOINT = has_endpoint_of(Run.__table__.c.workspace_id)  # returned by a closing hold (PostgreSQL)
_REALTIME_ENABLED = select(Workspace.realtime_enabled).where(Workspace.id == bindparam("workspace_id"))


class RunSubmitter(Protocol):
    """Where runs execute (heddle/loom/executor.py in process, heddle/queue/ with workers)."""

    def submit(self, run_id: uuid.UUID, claimed: int | None = None) -> None: ...

    def preclaim(self) -> dict | None:
        """Lease columns for a run about to be inserted, when this executor takes it at once."""


def mirror(row: Run | ToolCall, values: dict[str, Any]) -> None:
    """Copy plain values written by a Core UPDATE onto the ORM object read before it (maybe
    detached), as already stored: rendering sees them, and no flush writes them a second time."""
    for key, value in values.items():
        if not hasattr(value, "__clause_element__") and not hasattr(value, "compile"):
            set_committed_value(row, key, value)


@dataclass
class RunWork:
    """One open unit of work: its session, the events it stages and the runs it makes runnable."""

    session: AsyncSession
    fence: Fence | None = None
    # The workspace's realtime flag when the caller knows it; None: looked up before publishing.
    realtime: bool | None = None
    workspace_id: str | None = None
    # What the change causes, in order (RunEvent: heddle/loom/run_event.py).
    events: list[RunEvent] = field(default_factory=list)
    submit: list[uuid.UUID] = field(default_factory=list)
    # Runs this transaction created (their row is its own until commit, their event log empty),
    # by workspace: staging their events needs neither the row lock nor the log's last seq.
    created: dict[uuid.UUID, str] = field(default_factory=dict)
    # Runs whose row this transaction locked already (a fenced UPDATE), by workspace.
    held: dict[uuid.UUID, str] = field(default_factory=dict)
    # Events stored ahead of the staged ones (a reply's deltas, published already).
    first: dict[uuid.UUID, list[RunEvent]] = field(default_factory=dict)
    # Runs whose stored events are wanted back with their seq (a stream of this process follows
    # them: RunEventSignals.watched), and those events once staged, by run.
    numbered: Callable[[uuid.UUID], bool] | None = None
    stored: dict[uuid.UUID, list[RunEvent]] = field(default_factory=dict)
    # Set by `stage()` when the transaction owes a webhook delivery: only then is the
    # dispatcher woken after the commit.
    webhooks_owed: bool = False
    # Runs created already claimed by the in-process executor, by the fence token they carry.
    claimed: dict[uuid.UUID, int] = field(default_factory=dict)
    preclaim: Callable[[], dict | None] | None = None
    staged: bool = False
    # Workspaces whose webhook endpoint this transaction already asked about (see hold()).
    endpoints: dict[str, bool] = field(default_factory=dict)
    # Charges taken when the unit ends, after its events are staged (see charge_last).
    last_charges: list[tuple[Run, int, str, str]] = field(default_factory=list)

    # -- runs -----------------------------------------------------------------------------

    async def move(self, run: Run, event: str, **fields) -> Run:
        """Move `run` by `event` (states.TRANSITIONS) in this transaction, or raise InvalidTransition.

        Conditional on the run still being in the state read (`WHERE state = <from>`), and in a
        fenced unit on this executor still holding it: when only the fence differs,
        StaleExecutor is raised instead.
        """
        values = {**transition_values(run.state, event), **fields}
        statement = update(Run).where(Run.id == run.id, Run.state == run.state)
        # Fenced only for the executor's own run (a thread's next queued run is another one).
        fence = self.fence if self.fence is not None and self.fence.run_id == run.id else None
        if fence is not None:
            statement = statement.where(Run.fence == fence.token)
        result = await self.session.execute(statement.values(**values)
                                            .execution_options(synchronize_session=False))
        if result.rowcount != 1:
            row = (await self.session.execute(select(Run.state, Run.fence).where(Run.id == run.id))).first()
            if row is not None and fence is not None and row.fence != fence.token:
                raise StaleExecutor(run.id, fence.token)
            raise InvalidTransition(row.state if row else "missing", event)
        mirror(run, values)
        self.held[run.id] = run.workspace_id
        return run

    async def hold(self, run: Run | None = None, event: str | None = None, **values) -> None:
        """Fenced: go on holding the run (renewing its lease), writing `values` and, with `event`,
        moving it from `running` by that event, all in one UPDATE; StaleExecutor if lost."""
        assert self.fence is not None, "hold() needs a fenced unit of work"
        if event is not None:
            values = {**values, **transition_values(RUNNING, event)}
        if (run is not None and values.get("state") in run_rule.WEBHOOK_STATES
                and dialect.statements_are_dear(self.session)):
            # A change that may owe a webhook: the UPDATE also says whether the workspace has an
            # endpoint, which staging would otherwise ask in a statement of its own.
            self.endpoints[run.workspace_id] = bool(
                await self.fence.hold(self.session, returning=_HAS_ENDPOINT, **values))
        else:
            await self.fence.hold(self.session, **values)
        if run is not None:
            mirror(run, values)
            self.held[run.id] = run.workspace_id

    async def hold_or_cancelled(self, **values) -> None:
        """Like `hold`, but also passes when the run was cancelled under this executor.

        Cancel leaves the fencing token as it is (it changes the state, which already fails every
        `hold`), so the executor that sent a call before the cancel can still record that call's
        result; a takeover by another executor still moves the token and stops it.
        """
        fence = self.fence
        assert fence is not None, "hold_or_cancelled() needs a fenced unit of work"
        result = await self.session.execute(
            update(Run).where(Run.id == fence.run_id, Run.fence == fence.token,
                              or_(Run.state == RUNNING, and_(Run.state == FAILED, Run.error_code == CANCELLED)))
            .values(updated_at=Run.updated_at, lease_expires_at=case(
                (Run.state == RUNNING, utcnow() + fence.lease), else_=Run.lease_expires_at), **values)
            .execution_options(synchronize_session=False))
        if result.rowcount != 1:
            raise fence.stale()

    async def insert_run(self, row: dict[str, Any], *, claim: bool = False) -> Run:
        """A new run in an initial state (`running` or `queued`); with `claim`, inserted already
        claimed by the in-process executor when it has a free slot (no claim transaction)."""
        if row["state"] not in RUN_INITIAL:
            raise InvalidTransition("new", row["state"])
        if claim and self.preclaim is not None and (claimed := self.preclaim()) is not None:
            row = {**row, **claimed}
            self.claimed[row["id"]] = claimed["fence"]
        # A Core insert: the hottest write of the API (the ORM's own unit of work cost more).
        await self.session.execute(_INSERT_RUN, row)
        self.created[row["id"]] = row["workspace_id"]
        return Run(**row)

    async def charge(self, run: Run, amount_micro: int, *, reason: str, ref: str) -> None:
        """The one way a run pays (a model turn, a tool call, an `identify` lookup): the ledger
        row names the run and its key; billing.InsufficientCredits if the balance cannot pay.
        The run's own `cost_micro` is written by the step that charges (with its fenced UPDATE)."""
        await billing.charge(self.session, run.workspace_id, amount_micro, reason=reason, ref=ref, run_id=run.id,
                             key_id=run.key_id)

    def charge_last(self, run: Run, amount_micro: int, *, reason: str, ref: str) -> None:
        """`charge`, taken when the unit ends, after its events are staged and just before the
        commit: the charge locks the workspace's row until the commit, and every run of the
        workspace charges that row, so it is held for as few round trips as can be
        (docs/decisions.md, issue 31's third pass). billing.InsufficientCredits leaves the block."""
        self.last_charges.append((run, amount_micro, reason, ref))

    # -- tool calls -----------------------------------------------------------------------

    async def insert_tool_calls(self, rows: list[dict[str, Any]]) -> None:
        """New tool calls, each in an initial status (pending, failed or awaiting_approval)."""
        for row in rows:
            if row["status"] not in CALL_INITIAL:
                raise InvalidTransition("new", row["status"])
        await self.session.execute(_INSERT_TOOL_CALL, rows)

    async def move_call(self, call: ToolCall | uuid.UUID, status: str, event: str, **fields) -> str:
        """Move the tool call from `status` by `event` (states.CALL_TRANSITIONS); its new status.

        Conditional on the call still being in `status`: if another writer moved it first, this
        raises InvalidCallTransition with the status it found, and changes nothing. An ORM
        `call` passed in gets the new values too.
        """
        call_id = call if isinstance(call, uuid.UUID) else call.id
        target = next_call_status(status, event)
        values = {"status": target, "updated_at": utcnow(), **fields}
        result = await self.session.execute(
            update(ToolCall).where(ToolCall.id == call_id, ToolCall.status == status)
            .values(**values).execution_options(synchronize_session=False))
        if result.rowcount != 1:
            current = await self.session.scalar(select(ToolCall.status).where(ToolCall.id == call_id))
            raise InvalidCallTransition(current or "missing", event)
        if isinstance(call, ToolCall):
            mirror(call, values)
        return target

    async def start_attempt(self, call_id: uuid.UUID) -> None:
        """Fenced: mark that the call is about to be sent (states.in_flight), so a crash leaves its
        fate known to be unknown. Conditional on the call still being pending: this is the last
        write before the host is called, so a stale executor, or a call resolved meanwhile, stops.
        """
        await self.hold()
        call = await self.session.get(ToolCall, call_id)
        if call.status != CALL_PENDING:
            raise self.fence.stale(f"tool call {call_id} is already {call.status}")
        call.attempts = [*(call.attempts or []), {"n": len(call.attempts or []) + 1, "started_at": iso(utcnow()),
                                                  "in_flight": True}]

    # -- what the change causes -----------------------------------------------------------

    def message_created(self, thread_id: uuid.UUID, message: dict[str, Any] | BaseModel) -> None:
        assert not self.staged, "an event recorded after staging would never be stored"
        self.events.append(run_event.message_created(thread_id, message))

    def run_updated(self, thread_id: uuid.UUID, run: dict[str, Any] | BaseModel) -> None:
        assert not self.staged, "an event recorded after staging would never be stored"
        self.events.append(run_event.run_updated(thread_id, run))

    def message_feedback(self, thread_id: uuid.UUID, feedback: dict[str, Any]) -> None:
        assert not self.staged, "an event recorded after staging would never be stored"
        self.events.append(run_event.message_feedback(thread_id, feedback))

    def thread_deleted(self, thread_id: uuid.UUID, why: str) -> None:
        self.events.append(run_event.thread_deleted(thread_id, why))

    def changed_runs(self) -> set[uuid.UUID]:
        """The runs whose events this unit recorded."""
        return {event.run_id for event in self.events if event.run_id is not None}

    def start(self, run_id: uuid.UUID) -> None:
        """After the commit, submit the run to the executor (or nudge the one already on it)."""
        self.submit.append(run_id)

    async def _end(self) -> None:
        """What leaving the unit does before its commit: store the run events (and the webhook
        deliveries they owe) in this transaction, then take the charges left for last."""
        if not self.staged:
            self.staged = True
            stored_first = [event for events in self.first.values() for event in events]
            # A delivery enqueued directly (a memory change, loom/memory.py) already set it.
            self.webhooks_owed = await event_outbox.stage(
                self.session, [*stored_first, *self.events], held=self.held, created=self.created,
                endpoints=self.endpoints, numbered=self.numbered, stored=self.stored) or self.webhooks_owed
        for run, amount_micro, reason, ref in self.last_charges:
            await self.charge(run, amount_micro, reason=reason, ref=ref)
        self.last_charges.clear()


# A hook gets the committed unit of work; `deferrable` hooks may run after the HTTP response.
AfterCommit = Callable[[RunWork], Awaitable[None]]


class RunUnitOfWork:
    """Opens run units of work and runs the after-commit hooks registered at start-up
    (heddle/container.py: SSE and webhook wake-ups, realtime publish, the executor's submit)."""

    def __init__(self, db: Database):
        self.db = db
        self._now: list[AfterCommit] = []  # cheap, in-process wake-ups: right after the commit
        self._deferrable: list[AfterCommit] = []  # may wait until the response is sent
        self._preclaim: Callable[[], dict | None] | None = None
        self._numbered: Callable[[uuid.UUID], bool] | None = None

    def number_for(self, watched: Callable[[uuid.UUID], bool]) -> None:
        """Runs for which `watched` is true get their staged events numbered (see RunWork.stored)."""
        self._numbered = watched

    def on_commit(self, hook: AfterCommit, *, deferrable: bool = True) -> None:
        (self._deferrable if deferrable else self._now).append(hook)

    def submit_to(self, executor: RunSubmitter) -> None:
        """Runs that a committed unit made runnable go to `executor`; new runs may be preclaimed."""
        self._preclaim = lambda: executor.preclaim()  # looked up at each insert, as the executor decides

        async def submit(work: RunWork) -> None:
            for run_id in work.submit:
                if run_id in work.claimed:
                    executor.submit(run_id, claimed=work.claimed[run_id])
                else:
                    executor.submit(run_id)

        self.on_commit(submit)

    @asynccontextmanager
    async def joined(self, session: AsyncSession, *, finish: Callable[[AsyncSession], Awaitable[Any]],
                     realtime: bool | None = None,
                     defer: Callable[[Callable[[], Awaitable[None]]], None] | None = None) -> AsyncIterator[RunWork]:
        """A unit of work in the caller's open transaction (a request's write session): on
        leaving, staged, then `finish(session)` (which commits it, with whatever else the
        transaction owes), then the hooks; `defer` takes the deferrable ones for later."""
        work = RunWork(session, realtime=realtime, preclaim=self._preclaim, numbered=self._numbered)
        yield work
        await work._end()
        await finish(session)
        await self._after_commit(work, defer)

    @asynccontextmanager
    async def transaction(self, *, fence: Fence | None = None, realtime: bool | None = None,
                          workspace_id: str | None = None) -> AsyncIterator[RunWork]:
        """Open a transaction, yield its unit of work, stage its events, commit, run the hooks."""
        async with self.db.transaction() as session:
            work = RunWork(session, fence=fence, realtime=realtime, workspace_id=workspace_id,
                           preclaim=self._preclaim, numbered=self._numbered)
            yield work
            await work._end()
        await self._after_commit(work)

    async def _after_commit(self, work: RunWork,
                            defer: Callable[[Callable[[], Awaitable[None]]], None] | None = None) -> None:
        """Run the hooks of a committed unit; `defer` takes the deferrable ones for later."""
        for hook in self._now:
            await hook(work)

        async def rest() -> None:
            for hook in self._deferrable:
                await hook(work)

        if defer is not None:
            defer(rest)
        else:
            await rest()

    async def realtime_enabled(self, work: RunWork) -> bool:
        """The unit's realtime flag, read from its workspace when the caller did not know it."""
        if work.realtime is None:
            if work.workspace_id is None:
                return False
            async with self.db.session() as session:
                work.realtime = bool(await session.scalar(_REALTIME_ENABLED, {"workspace_id": work.workspace_id}))
        return work.realtime


def publish_to(uow: RunUnitOfWork, sink: EventSink) -> AfterCommit:
    """The realtime hook: a committed unit's events go to `sink` if its workspace has realtime."""

    async def publish(work: RunWork) -> None:
        if not work.events or not await uow.realtime_enabled(work):
            return
        for event in work.events:
            await sink.publish(event.channel, event.name, event.payload)

    return publish
