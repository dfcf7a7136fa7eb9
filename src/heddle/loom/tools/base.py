"""What a tool kind must provide (`ToolKind`), and what carrying out one call produced (`ToolExecution`).

A tool kind is an adapter inside loom: it tells which entries of an agent file's `tools` are
its own, how the model sees them, what a call of one records, and how a call is carried out by
the executor holding the run. heddle/loom/tools/__init__.py lists the kinds a process knows.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.providers.base import ToolSpec
from heddle.loom.states import CALL_FAILED
from heddle.observability.request_log import LoggedRequest


@dataclass
class ToolExecution:
    """What carrying out one tool call produced."""

    status: str  # CALL_SUCCEEDED | CALL_FAILED | CALL_AWAITING_OUTCOME (heddle/loom/states.py)
    result: dict[str, Any] | None = None
    patch_ref: str | None = None
    cost_micro: int = 0  # the call's price: already charged by the kind itself (`charged`) or to charge
    charged: bool = False
    attempts: list[dict[str, Any]] = field(default_factory=list)
    connection_id: uuid.UUID | None = None
    # Request-log rows the call made (a built-in call is logged like an API call): written in
    # the transaction that records the call, so the run's trace has them once the run ends.
    logged: list[LoggedRequest] = field(default_factory=list)
    # Writes the call makes, done in the fenced unit of work that records it (a `remember`
    # call's fact): they commit with the call's result or not at all, so a resumed run that
    # carries the call out again cannot write them twice. Each gets that unit's RunWork.
    writes: list[Callable[[Any], Awaitable[None]]] = field(default_factory=list)


def failed(code: str, message: str, connection_id: uuid.UUID | None = None) -> ToolExecution:
    return ToolExecution(status=CALL_FAILED, result={"error": {"code": code, "message": message}},
                         connection_id=connection_id)


class ToolKind(Protocol):
    """One kind of tool. Its calls are stored with `tool_calls.kind = kind`."""

    kind: str

    def declares(self, tool: dict[str, Any]) -> str | None:
        """The tool's name if this agent-file `tools` entry is of this kind, else None."""

    def spec(self, tool: dict[str, Any]) -> ToolSpec:
        """How the model sees the tool."""

    def definition(self, tool: dict[str, Any]) -> dict[str, Any]:
        """What a call of the tool records and is carried out by: `kind`, and `interaction`,
        `risk` and `reliability` when the kind has them (`interaction: approve` asks first)."""

    def unknown_fate(self, call: ToolCall) -> bool:
        """A previous process started this call and stopped: its fate is unknown (the call then
        waits in `awaiting_outcome` for the caller to confirm it)."""

    def stopped(self, call: ToolCall) -> dict[str, Any] | None:
        """The result to record when the run is cancelled in the middle of the call (between
        attempts), or None to record nothing."""

    async def execute(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        """Carry out the call for the executor holding `fence`: every write it makes is fenced
        (a RunWork with `fence`), and it calls nothing once the fence moved on (StaleExecutor
        propagates to the engine). Charges go through `RunWork.charge`."""
