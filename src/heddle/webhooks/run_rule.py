"""Which run changes owe a webhook: `run.<state>` once for each state a run *entered*.

A Run as the API shows it is the payload. A `run.updated` that repeats the state the run was
already in (one of several outcomes posted, say) is not a new webhook. The run's event log
(heddle/loom/event_outbox.py) applies this rule in the transaction of the change, so a delivery
is owed exactly when the change commits (heddle/webhooks/outbox.py).
"""

from __future__ import annotations

from typing import Any

WEBHOOK_STATES = ("closed", "failed", "awaiting_input", "awaiting_outcome")  # run.<state> webhooks


def may_owe(updates: list[dict[str, Any]]) -> bool:
    """Whether any of these Runs is in a state that has a webhook (before reading anything)."""
    return any(data.get("state") in WEBHOOK_STATES for data in updates)


def owed(previous_state: str | None, updates: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The `(event type, Run)` deliveries owed by a run's successive `updates`, given the state
    its last stored update had."""
    deliveries = []
    state = previous_state
    for data in updates:
        if data.get("state") != state and data.get("state") in WEBHOOK_STATES:
            deliveries.append((f"run.{data['state']}", data))
        state = data.get("state")
    return deliveries
