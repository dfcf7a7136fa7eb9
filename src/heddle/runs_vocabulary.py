"""The names a run is spoken of in outside loom: its states and the events it publishes.

A neutral home below every package, so that a lower layer (the realtime bus, the Python
client) can name a run's states and events without importing loom, which sits above them
(docs/architecture.md, "Layers and import contracts"). Names only: what moves a run from one
state to another is loom's (`heddle.loom.states`), and loom takes its names from here.
"""

from __future__ import annotations

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

# One streamed piece of an answer, as a thread channel carries it.
DELTA_EVENT = "message.delta"
# A stored row of several consecutive `message.delta` pieces: the bus unpacks it into pieces,
# so a channel never carries this name.
PACKED_DELTAS = "message.deltas"
