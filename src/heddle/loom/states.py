"""The run state machine as one explicit table of allowed transitions.

Every change of `Run.state` goes through `transition()`, which applies it with a conditional
UPDATE (`WHERE state = <from>`), so two processes can never both move the same run.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom.models import Run

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


async def transition(session: AsyncSession, run: Run, event: str, **fields) -> Run:
    """Move `run` by `event` inside the caller's transaction, or raise InvalidTransition."""
    target = next_state(run.state, event)
    now = utcnow()
    values = {"state": target, "updated_at": now, **fields}
    if target in TERMINAL:
        values["closed_at"] = now
        values["lease_owner"] = None
        values["lease_expires_at"] = None
    result = await session.execute(
        update(Run).where(Run.id == run.id, Run.state == run.state).values(**values)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:
        current = await session.scalar(
            Run.__table__.select().with_only_columns(Run.state).where(Run.id == run.id))
        raise InvalidTransition(current or "missing", event)
    for key, value in values.items():
        setattr(run, key, value)
    return run
