"""The run and tool-call state machines, each as one explicit table of allowed transitions.

These tables are the only source of allowed moves. The run unit of work
(heddle/loom/unit_of_work.py) is the only writer of `Run.state` and `ToolCall.status`: it applies
each move with a conditional UPDATE (`WHERE state = <from>`), so two processes can never both move
the same run or call, and a call that reached a final status (succeeded, failed, resolved,
declined) can never move back. In an executor's unit of work the move also requires that it still
holds the run (its fencing token, heddle/loom/lease.py). tests/loom/test_unit_of_work.py checks
both from the source.

A new run state: add it to STATES and its moves to TRANSITIONS, then the step that takes it
(heddle/loom/engine.py) or the request that does (heddle/loom/service.py), through `RunWork.move`.

What the database does by itself on these columns (PostgreSQL only, no code to call):
- Migration 0006, `heddle_runs_enqueue_created` / `heddle_runs_enqueue_resumed` (only on
  connections of HEDDLE_EXECUTOR=queue processes): a run inserted `running`, or moved into
  `running` from any other state (`answer`, `outcome`, `approval`, `start` below), gets its
  procrastinate job in the same transaction, so a worker executes it once the move commits. That
  is the queue executor's `submit`; the in-process executor is submitted after the commit by the
  unit of work's hook instead. It stays a trigger: it must be in the very transaction of the move
  on any connection (a crash between commit and enqueue would strand the run), and moving it into
  code needs a migration to drop it.
- Migration 0010, `heddle_run_events_notify`: each stored run event (heddle/loom/event_log.py)
  is sent on the PostgreSQL event bus by the transaction that stores it (when the connection
  names a bus channel). It concerns `run_events`, not these states; listed here so that every
  effect of a move is found from this file.
"""

from __future__ import annotations

import uuid
from typing import Any

from heddle.db.base import utcnow
from heddle.errors import HeddleError

# The names of the states and statuses live in heddle/runs_vocabulary.py, below every layer, so
# that the realtime bus and the Python client can say them without importing loom; this module
# owns what moves a run or a call from one to another. QUEUED: a run created by a message posted
# with `if_busy: enqueue` while another run is active; it starts (-> running) when the run ahead
# of it ends. Only callers that enqueue ever see it.
from heddle.runs_vocabulary import (  # noqa: F401 (re-exported: loom names them from here)
    AWAITING_INPUT,
    AWAITING_OUTCOME,
    CALL_AWAITING_APPROVAL,
    CALL_AWAITING_OUTCOME,
    CALL_DECLINED,
    CALL_FAILED,
    CALL_PENDING,
    CALL_RESOLVED,
    CALL_STATUSES,
    CALL_SUCCEEDED,
    CLOSED,
    FAILED,
    QUEUED,
    RUNNING,
    STATES,
    TERMINAL,
)

RUN_INITIAL = frozenset({RUNNING, QUEUED})  # what a new run is inserted as
# A cancelled run is `failed` with this error code (event "cancel", heddle/loom/cancellation.py).
CANCELLED = "cancelled"

# (from state, event) -> to state. Anything not listed is refused.
TRANSITIONS: dict[tuple[str, str], str] = {
    (RUNNING, "ask_user"): AWAITING_INPUT,         # the agent asks the user a question
    (RUNNING, "await_outcome"): AWAITING_OUTCOME,  # a confirm tool, or a call of unknown fate
    (RUNNING, "finish"): CLOSED,                   # the model replied without tool calls
    (RUNNING, "fail"): FAILED,                     # provider error, limits, credits, crash
    (AWAITING_INPUT, "answer"): RUNNING,           # the user's next message answers
    (AWAITING_OUTCOME, "outcome"): RUNNING,        # every awaited tool call has an outcome
    # Run control (loom/cancellation.py): cancel from any non-terminal state, queued runs, approvals.
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


class RunFailure(Exception):
    """A step ends the run as `failed` with `code` (a limit, the model, credits): the engine's
    top level moves it by `fail` (heddle/loom/engine.py). `turn` is a `turns` row stored with the
    failure (a model call that gave no usable reply, recorded with its attempts:
    loom/turn_record.py)."""

    def __init__(self, code: str, message: str, *, turn: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.turn = turn


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


# -- tool calls ------------------------------------------------------------------------------

# CALL_AWAITING_APPROVAL (interaction: approve, loom/approvals.py): a call waits for a person
# before it is made; CALL_DECLINED: the person said no.
CALL_FINAL = frozenset({CALL_SUCCEEDED, CALL_FAILED, CALL_RESOLVED, CALL_DECLINED})
# What a new call is inserted as: pending, failed (an unknown tool) or awaiting a person's approval.
CALL_INITIAL = frozenset({CALL_PENDING, CALL_FAILED, CALL_AWAITING_APPROVAL})

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


def in_flight(attempts: list[dict[str, Any]] | None) -> bool:
    """Whether a hosted call was sent and its answer is not recorded yet: its last attempt is
    marked `in_flight` (RunWork.start_attempt) just before the host is called, and replaced by
    the real attempts when the result is recorded. A cancel leaves such a call to its engine,
    and an `at_most_once` call found with attempts by a later step is of unknown fate."""
    return bool(attempts) and bool(attempts[-1].get("in_flight"))
