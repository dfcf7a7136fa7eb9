"""What a tool call costs: a property of the call, not of the process that recorded it.

A call of a priced kind (a hosted tool, an MCP server's tool) costs the workspace's
`tool_call_price_credits` once its attempt has started: the fenced in-flight mark was written
and the request may have reached the host. From then on whatever settles the call changes
nothing: its answer, a refusal, a timeout, or, when its process died or lost the run mid-call,
the `awaiting_outcome` the next executor records and the outcome the caller posts. A call that
never started (refused arguments, no connection, no subject token) costs nothing, and a kind
that bills itself (`identify`, charged by Identify at its own price) is not charged again.

The charge is taken in the transaction that moves the call out of `pending` (ToolSteps), and
that move is conditional on the call still being pending: a call is charged at most once, by
whichever executor records it, whether the first (its answer came) or the next (it did not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PRICED_KINDS = frozenset({"hosted", "mcp"})


def tool_call_charge(
    kind: str,
    *,
    price_micro: int,
    attempts: Sequence[Any] | None,
    new_attempts: Sequence[Any] | None = None,
    charged_by_kind: bool = False,
) -> int:
    """The micro-credits to charge when a call is recorded.

    `attempts` are the call's stored attempts (the in-flight mark of a process that died is one);
    `new_attempts` those this executor made; `charged_by_kind` when the kind already paid."""
    if charged_by_kind or kind not in PRICED_KINDS:
        return 0
    started = bool(attempts) or bool(new_attempts)
    return price_micro if started else 0
