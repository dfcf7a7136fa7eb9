"""The built-in `remember` and `forget` tools of an agent whose file says `memory: {remember: true}`.

They are offered beside the agent's own tools (never written in its `tools`: heddle/loom/tools
adds them from `memory`, loom/memory.py `tool_entries`), under names no other source may take
(names.RESERVED_NAMES). A call
only ever touches the run's own subject's facts (heddle/loom/memory.py): `forget` of an id that
is another subject's (or another workspace's) finds nothing, exactly like an id that never
existed. The write itself is one of the call's `writes`, done in the fenced unit of work that
records the call (heddle/loom/tool_steps.py): a stale executor writes nothing, and a run resumed
after a crash carries the call out again without storing its fact twice.
"""

from __future__ import annotations

import uuid
from typing import Any

from heddle.db.base import Database
from heddle.loom import memory
from heddle.loom.lease import Fence
from heddle.loom.memory import FORGET, REMEMBER
from heddle.loom.models import Run, ToolCall
from heddle.loom.providers.base import ToolSpec
from heddle.loom.states import CALL_SUCCEEDED
from heddle.loom.tools.base import ToolExecution, failed
from heddle.loom.unit_of_work import RunWork

SPECS = {
    REMEMBER: ToolSpec(
        name=REMEMBER,
        description=("Remember a fact about this person for later conversations (with any of this business's "
                     "agents): one short sentence, in your own words."),
        parameters={"type": "object", "properties": {"fact": {"type": "string", "minLength": 1}},
                    "required": ["fact"]}),
    FORGET: ToolSpec(
        name=FORGET,
        description="Forget a fact remembered about this person, by the id shown beside it.",
        parameters={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
}


class MemoryTools:
    kind = "memory"

    def __init__(self, db: Database, caps: memory.Caps):
        self.db = db
        self.caps = caps

    def declares(self, tool: dict[str, Any]) -> str | None:
        name = tool.get("builtin")
        return name if name in SPECS else None

    def spec(self, tool: dict[str, Any]) -> ToolSpec:
        return SPECS[tool["builtin"]]

    def definition(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {"kind": self.kind, "builtin": tool["builtin"]}

    def unknown_fate(self, call: ToolCall) -> bool:
        return False  # its write commits with its record: unrecorded means not written

    def stopped(self, call: ToolCall) -> dict[str, Any] | None:
        return None

    async def execute(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        args = call.args or {}
        async with self.db.session() as session:  # reads only: the write is the record's
            if call.name == REMEMBER:
                problem = memory.fact_problem(args.get("fact"), self.caps)
                if problem is not None:
                    return failed("invalid_arguments", f"remember: {problem}.")
                if await memory.count(session, run.workspace_id, run.subject) >= self.caps.max_facts:
                    return failed("memory_full", f"This person already has {self.caps.max_facts} remembered facts; "
                                                 "forget one first.")
                return self._remember(run, call, args["fact"].strip())
            found = await memory.find(session, run.workspace_id, run.subject, args.get("id"))
        if found is None:
            return failed("not_found", "No fact with that id is remembered about this person.")
        return self._forget(run, found.id, found.content)

    def _remember(self, run: Run, call: ToolCall, fact: str) -> ToolExecution:
        fact_id = uuid.uuid4()

        async def write(work: RunWork) -> None:
            await memory.store(work, workspace_id=run.workspace_id, subject=run.subject, content=fact,
                               source="tool", fact_id=fact_id, agent_id=run.agent_id, run_id=run.id,
                               tool_call_id=call.id)

        return ToolExecution(status=CALL_SUCCEEDED, result={"id": str(fact_id), "remembered": fact}, writes=[write])

    def _forget(self, run: Run, fact_id: uuid.UUID, content: str) -> ToolExecution:
        async def write(work: RunWork) -> None:
            await memory.remove(work, run.workspace_id, run.subject, fact_id)

        return ToolExecution(status=CALL_SUCCEEDED, result={"id": str(fact_id), "forgotten": content}, writes=[write])
