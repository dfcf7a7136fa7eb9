"""The agent's tools as the model sees them, and how each kind of tool call is carried out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from heddle.loom.models import Agent, Run, ToolCall
from heddle.loom.providers.base import ASK_USER_TOOL, ToolSpec

ASK_USER_SPEC = ToolSpec(
    name=ASK_USER_TOOL,
    description="Ask the user a question and wait for their answer.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
)

IDENTIFY_SPEC = ToolSpec(
    name="identify",
    description=("Identify the financial institution behind an account identifier (BIC, IBAN, US routing "
                 "number, UK sort code, IFSC, Nigerian NUBAN, mobile-money wallet or Ghana bank code)."),
    parameters={"type": "object", "properties": {
        "identifier": {"type": "string"}, "rail": {"type": "string"}, "country": {"type": "string"},
        "account_number": {"type": "string"}}, "required": ["identifier"]},
)


def tool_specs(agent: Agent) -> list[ToolSpec]:
    specs = [ASK_USER_SPEC]
    for tool in agent.tools:
        if tool.get("builtin") == "identify":
            specs.append(IDENTIFY_SPEC)
        elif "name" in tool:
            specs.append(ToolSpec(name=tool["name"], description=tool["description"], parameters=tool["parameters"]))
    return specs


def tool_definition(agent: Agent, name: str) -> dict[str, Any] | None:
    if name == ASK_USER_TOOL:
        return {"kind": "ask"}
    for tool in agent.tools:
        if tool.get("builtin") == name:
            return {"kind": "builtin", "builtin": name}
        if tool.get("name") == name:
            return {"kind": "hosted", **tool}
    return None


@dataclass
class ToolExecution:
    """What carrying out one tool call produced."""

    status: str  # succeeded | failed | awaiting_outcome
    result: dict[str, Any] | None = None
    patch_ref: str | None = None
    cost_micro: int = 0  # already charged by the tool itself (identify) or to charge (hosted)
    charged: bool = False
    attempts: list[dict[str, Any]] = field(default_factory=list)
    connection_id: uuid.UUID | None = None


class ToolRunner(Protocol):
    """Carries out a call for the executor holding `fence` (heddle.loom.lease.Fence).

    Any write it makes (an in-flight mark, a charge) is guarded by `fence.hold`, and it calls
    nothing once the fence moved on (StaleExecutor propagates to the engine).
    """

    async def run_builtin(self, run: Run, call: ToolCall, fence) -> ToolExecution: ...

    async def run_hosted(self, run: Run, call: ToolCall, definition: dict[str, Any], fence) -> ToolExecution: ...
