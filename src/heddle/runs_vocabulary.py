"""The names a run is spoken of in outside loom: its states, the events it publishes, and the
stored form of streamed pieces.

A neutral home below every package, so that a lower layer (the realtime bus, the Python
client) can name a run's states and events without importing loom, which sits above them
(docs/architecture.md, "Layers and import contracts"). Names, and the one format both sides of
the event log read (`pack` / `unpack`): what moves a run from one state to another is loom's
(`heddle.loom.states`). Loom takes these names from here and defines none of them again
(tests/architecture/test_runs_vocabulary.py checks the source).
"""

from __future__ import annotations

from typing import Any

# A run's states (the transition table between them is `heddle.loom.states.TRANSITIONS`).
QUEUED = "queued"
RUNNING = "running"
AWAITING_INPUT = "awaiting_input"
AWAITING_OUTCOME = "awaiting_outcome"
CLOSED = "closed"
FAILED = "failed"
STATES = (QUEUED, RUNNING, AWAITING_INPUT, AWAITING_OUTCOME, CLOSED, FAILED)
TERMINAL = (CLOSED, FAILED)
# Where a run stops until someone acts (or for good): what a client waits for.
SETTLED = (CLOSED, FAILED, AWAITING_INPUT, AWAITING_OUTCOME)

# A tool call's statuses (the transition table is `heddle.loom.states.CALL_TRANSITIONS`).
CALL_PENDING = "pending"
CALL_SUCCEEDED = "succeeded"
CALL_FAILED = "failed"
CALL_AWAITING_OUTCOME = "awaiting_outcome"
CALL_RESOLVED = "resolved"
CALL_AWAITING_APPROVAL = "awaiting_approval"  # interaction: approve, until a person answers
CALL_DECLINED = "declined"
CALL_STATUSES = (CALL_PENDING, CALL_SUCCEEDED, CALL_FAILED, CALL_AWAITING_OUTCOME, CALL_RESOLVED,
                 CALL_AWAITING_APPROVAL, CALL_DECLINED)

# The events of a run, as a thread channel, the SSE stream and the stored log carry them.
RUN_UPDATED = "run.updated"
MESSAGE_CREATED = "message.created"
# One streamed piece of an answer.
DELTA_EVENT = "message.delta"
# A subject rated one of the run's answers, or withdrew its rating (also a webhook).
MESSAGE_FEEDBACK = "message.feedback"
RUN_EVENTS = (RUN_UPDATED, MESSAGE_CREATED, DELTA_EVENT, MESSAGE_FEEDBACK)
# Not a run's: a thread erased (its channel's last event).
THREAD_DELETED = "thread.deleted"
# A stored row of several consecutive `message.delta` pieces (`pack`): whoever reads a row
# unpacks it into pieces (`unpack`), so a channel never carries this name.
PACKED_DELTAS = "message.deltas"


def pack(pieces: list[dict[str, Any]]) -> tuple[str, Any]:
    """The stored row `(event, data)` of consecutive `message.delta` pieces: one piece as it is,
    several as one row (the row's `seq` is then its last piece's)."""
    return (DELTA_EVENT, pieces[0]) if len(pieces) == 1 else (PACKED_DELTAS, pieces)


def unpack(event: str, data: Any) -> list[tuple[str, Any]]:
    """The events a stored row holds, in order: each piece of a packed row, else the row itself."""
    if event == PACKED_DELTAS and isinstance(data, list) and all(isinstance(d, dict) for d in data):
        return [(DELTA_EVENT, piece) for piece in data]
    return [(event, data)]


# What started a run (runs.origin): a message posted to the API, a schedule firing, the console's
# playground, an eval case, or a request over AG-UI or A2A.
ORIGIN_API = "api"
ORIGIN_SCHEDULE = "schedule"
ORIGIN_PLAYGROUND = "playground"
ORIGIN_EVAL = "eval"
ORIGIN_AGUI = "agui"
ORIGIN_A2A = "a2a"
RUN_ORIGINS = (ORIGIN_API, ORIGIN_SCHEDULE, ORIGIN_PLAYGROUND, ORIGIN_EVAL, ORIGIN_AGUI, ORIGIN_A2A)
