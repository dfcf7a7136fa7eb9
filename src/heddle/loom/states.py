"""The run and tool-call state machines, each as one explicit table of allowed transitions.

Every change of `Run.state` goes through `transition()`, and every change of `ToolCall.status`
through `transition_call()`; each applies it with a conditional UPDATE (`WHERE state = <from>`),
so two processes can never both move the same run or call, and a call that reached a final
status (succeeded, failed, resolved) can never move back. An executor passes its fencing token
(heddle/loom/lease.py) so the move also requires that it still holds the run.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom.models import Run, ToolCall

RUNNING = "running"
AWAITING_INPUT = "awaiting_input"
AWAITING_OUTCOME = "awaiting_outcome"
CLOSED = "closed"
FAILED = "failed"
# A run created by a message posted with `if_busy: enqueue` while another run is active; it
# starts (-> running) when the run ahead of it ends. Only callers that enqueue ever see it.
QUEUED = "queued"

STATES = (QUEUED, RUNNING, AWAITING_INPUT, AWAITING_OUTCOME, CLOSED, FAILED)
TERMINAL = frozenset({CLOSED, FAILED})

# (from state, event) -> to state. Anything not listed is refused.
TRANSITIONS: dict[tuple[str, str], str] = {
    (RUNNING, "ask_user"): AWAITING_INPUT,         # the agent asks the user a question
    (RUNNING, "await_outcome"): AWAITING_OUTCOME,  # a confirm tool, or a call of unknown fate
    (RUNNING, "finish"): CLOSED,                   # the model replied without tool calls
    (RUNNING, "fail"): FAILED,                     # provider error, limits, credits, crash
    (AWAITING_INPUT, "answer"): RUNNING,           # the user's next message answers
    (AWAITING_OUTCOME, "outcome"): RUNNING,        # every awaited tool call has an outcome
    # Run control (loom/control.py): cancel from any non-terminal state, queued runs, approvals.
    (RUNNING, "await_approval"): AWAITING_INPUT,   # an `interaction: approve` call asks first
    (AWAITING_INPUT, "approval"): RUNNING,         # every pending approval is answered
    (QUEUED, "start"): RUNNING,                    # the run ahead of it ended
    (QUEUED, "cancel"): FAILED,
    (RUNNING, "cancel"): FAILED,
    (AWAITING_INPUT, "cancel"): FAILED,
    (AWAITING_OUTCOME, "cancel"): FAILED,
}


class StaleExecutor(Exception):
    """This executor no longer holds the run: another one claimed it (fence), or it left `running`.

    Raised by the fenced writes (heddle/loom/lease.py) and caught at the top of the engine,
    which then stops without writing anything more.
    """

    def __init__(self, run_id: uuid.UUID, token: int, why: str = "fence moved on"):
        super().__init__(f"run {run_id}: executor with fence {token} is stale ({why})")
        self.run_id = run_id
        self.token = token
        self.why = why


class InvalidTransition(HeddleError):
    def __init__(self, state: str, event: str):
        super().__init__("invalid_state_transition",
                         f"A run in state {state!r} cannot take event {event!r}.",
                         details={"state": state, "event": event})


def next_state(state: str, event: str) -> str:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise InvalidTransition(state, event) from None


def transition_values(state: str, event: str) -> dict:
    """The column values of moving a run in `state` by `event` (InvalidTransition if not allowed).

    Leaving `running` also drops the lease: no executor holds a run that waits or has ended.
    """
    target = next_state(state, event)
    now = utcnow()
    values = {"state": target, "updated_at": now}
    if target in TERMINAL:
        values["closed_at"] = now
    if target != RUNNING:
        values["lease_owner"] = None
        values["lease_expires_at"] = None
    return values


async def transition(session: AsyncSession, run: Run, event: str, *, fence: int | None = None,
                     **fields) -> Run:
    """Move `run` by `event` inside the caller's transaction, or raise InvalidTransition.

    With `fence`, the move also requires `runs.fence = fence`; when only the fence differs,
    StaleExecutor is raised instead of InvalidTransition.
    """
    values = {**transition_values(run.state, event), **fields}
    statement = update(Run).where(Run.id == run.id, Run.state == run.state)
    if fence is not None:
        statement = statement.where(Run.fence == fence)
    result = await session.execute(statement.values(**values).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        row = (await session.execute(select(Run.state, Run.fence).where(Run.id == run.id))).first()
        if row is not None and fence is not None and row.fence != fence:
            raise StaleExecutor(run.id, fence)
        raise InvalidTransition(row.state if row else "missing", event)
    for key, value in values.items():
        setattr(run, key, value)
    return run


# -- tool calls ------------------------------------------------------------------------------

CALL_PENDING = "pending"
CALL_SUCCEEDED = "succeeded"
CALL_FAILED = "failed"
CALL_AWAITING_OUTCOME = "awaiting_outcome"
CALL_RESOLVED = "resolved"

# interaction: approve (loom/approvals.py): a call waits for a person before it is made.
CALL_AWAITING_APPROVAL = "awaiting_approval"
CALL_DECLINED = "declined"

CALL_STATUSES = (CALL_PENDING, CALL_SUCCEEDED, CALL_FAILED, CALL_AWAITING_OUTCOME, CALL_RESOLVED,
                 CALL_AWAITING_APPROVAL, CALL_DECLINED)
CALL_FINAL = frozenset({CALL_SUCCEEDED, CALL_FAILED, CALL_RESOLVED, CALL_DECLINED})

# (from status, event) -> to status. Nothing leaves a final status.
CALL_TRANSITIONS: dict[tuple[str, str], str] = {
    (CALL_PENDING, "succeed"): CALL_SUCCEEDED,                 # the tool answered (or the user, for ask_user)
    (CALL_PENDING, "fail"): CALL_FAILED,                       # the tool refused, or could not be called
    (CALL_PENDING, "await_outcome"): CALL_AWAITING_OUTCOME,    # a confirm tool, or a call of unknown fate
    (CALL_AWAITING_OUTCOME, "resolve"): CALL_RESOLVED,         # the caller posted the outcome
    (CALL_AWAITING_APPROVAL, "approve"): CALL_PENDING,         # approved: the engine makes the call
    (CALL_AWAITING_APPROVAL, "decline"): CALL_DECLINED,        # declined, by an answer, a message or a cancel
}

# What a tool execution's status means as an event.
CALL_EVENT_FOR_STATUS = {CALL_SUCCEEDED: "succeed", CALL_FAILED: "fail", CALL_AWAITING_OUTCOME: "await_outcome"}


class InvalidCallTransition(HeddleError):
    def __init__(self, status: str, event: str):
        super().__init__("invalid_state_transition",
                         f"A tool call in status {status!r} cannot take event {event!r}.",
                         details={"tool_call_status": status, "event": event})


def next_call_status(status: str, event: str) -> str:
    try:
        return CALL_TRANSITIONS[(status, event)]
    except KeyError:
        raise InvalidCallTransition(status, event) from None


async def transition_call(session: AsyncSession, call_id: uuid.UUID, status: str, event: str,
                          **fields) -> str:
    """Move the tool call from `status` by `event` inside the caller's transaction; its new status.

    Conditional on the call still being in `status`: if another writer moved it first, this
    raises InvalidCallTransition with the status it found, and changes nothing.
    """
    target = next_call_status(status, event)
    result = await session.execute(
        update(ToolCall).where(ToolCall.id == call_id, ToolCall.status == status)
        .values(status=target, updated_at=utcnow(), **fields).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        current = await session.scalar(select(ToolCall.status).where(ToolCall.id == call_id))
        raise InvalidCallTransition(current or "missing", event)
    return target
