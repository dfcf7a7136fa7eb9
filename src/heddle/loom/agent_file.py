"""The agent file (YAML or JSON): validated into tool definitions the engine can run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from heddle.loom.providers.base import ASK_USER_TOOL
from heddle.loom.schemas import Interaction, Reliability, Risk  # the API's enums, declared once
from heddle.loom.tools.names import RESERVED_NAMES

BUILTIN_TOOLS = {"identify", "schedule_followup"}
SCHEDULE_ENTRY = {"builtin": "schedule_followup"}  # what `schedules: true` stores (loom/tools/schedule.py)
_TOOL_NAME = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"


class BuiltinTool(BaseModel):
    model_config = ConfigDict(extra="forbid")
    builtin: Literal["identify"]


class ApprovalRule(BaseModel):
    """When an `interaction: approve` call needs a person's approval (loom/approvals.py).

    `above: {amount: 100}` asks only when the numeric argument `amount` is above 100 (or is
    missing or not a number: when in doubt, ask). Without a rule every call is asked about.
    """

    model_config = ConfigDict(extra="forbid")
    above: dict[Annotated[str, Field(min_length=1, max_length=64)], float] = Field(min_length=1, max_length=16)


class HostedTool(BaseModel):
    """A tool served by the caller's tool host (a connection), POSTed at `path`."""

    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(pattern=_TOOL_NAME)]
    description: Annotated[str, Field(min_length=1, max_length=1024)]
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    connection: str | None = None  # pinned connection (name or id); None = unpinned
    path: Annotated[str, Field(pattern=r"^/[^\s?#]*$", max_length=500)]
    risk: Risk = "low"
    interaction: Interaction = "auto"
    reliability: Reliability = "idempotent"
    approve_when: ApprovalRule | None = None  # only with interaction: approve

    @model_validator(mode="after")
    def _rule_needs_approve(self) -> HostedTool:
        if self.approve_when is not None and self.interaction != "approve":
            raise ValueError("approve_when needs interaction: approve")
        return self

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        if v.get("type") != "object":
            raise ValueError("must be a JSON Schema with type: object")
        if "properties" in v and not isinstance(v["properties"], dict):
            raise ValueError("properties must be a mapping")
        # Every call's arguments are checked against it (loom/tool_steps.py): refuse, at save, a
        # schema that could not check anything.
        return check_json_schema(v)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v == ASK_USER_TOOL or v in BUILTIN_TOOLS or v in RESERVED_NAMES:
            raise ValueError(f"{v!r} is reserved for a built-in tool")
        return v


class McpToolSettings(BaseModel):
    """Heddle's settings for one tool of an MCP server; what is left out, its annotations decide."""

    model_config = ConfigDict(extra="forbid")
    interaction: Interaction | None = None
    risk: Risk | None = None
    reliability: Reliability | None = None


_ToolName = Annotated[str, Field(pattern=_TOOL_NAME)]


class McpTools(BaseModel):
    """The tools of an MCP server (a connection of kind `mcp`) the agent may use, by their own names.

    The server's list is read when a run needs it (heddle/loom/tools/mcp.py), not here: only the
    names this entry writes down can be checked when the agent is saved.
    """

    model_config = ConfigDict(extra="forbid")
    mcp: Annotated[str, Field(min_length=1, max_length=200)]  # the connection's name (or id)
    tools: Literal["*"] | Annotated[list[_ToolName], Field(min_length=1, max_length=64)] = "*"
    settings: dict[_ToolName, McpToolSettings] = Field(default_factory=dict, max_length=64)

    @model_validator(mode="after")
    def _settings_for_listed_tools(self) -> McpTools:
        if ASK_USER_TOOL in self.named():
            raise ValueError(f"{ASK_USER_TOOL!r} is reserved for a built-in tool")
        if self.tools != "*":
            if len(set(self.tools)) != len(self.tools):
                raise ValueError("tools: a tool is listed twice")
            if extra := sorted(set(self.settings) - set(self.tools)):
                raise ValueError(f"settings: {', '.join(map(repr, extra))} not in this entry's tools")
        return self

    def named(self) -> list[str]:
        """The tool names this entry writes down (its list, else its settings' keys)."""
        return list(self.settings) if self.tools == "*" else list(self.tools)


def _tool_kind(value: Any) -> str:
    """A tool entry is a built-in when it says `builtin:`, an MCP server's tools when it says
    `mcp:`; anything else is read as a hosted tool.

    Choosing first (rather than trying both shapes) gives one error about the entry the author
    meant: `{builtin: identfy}` is "tools.0.builtin: Input should be 'identify'", not two
    failures, one of them about a hosted tool the author never wrote."""
    data = value if isinstance(value, dict) else getattr(value, "__dict__", {})
    return _BUILTIN_TAG if "builtin" in data else _MCP_TAG if "mcp" in data else _HOSTED_TAG


_BUILTIN_TAG, _HOSTED_TAG, _MCP_TAG = _TAGS = "builtin-tool", "hosted-tool", "mcp-tools"
ToolEntry = Annotated[
    Annotated[BuiltinTool, Tag(_BUILTIN_TAG)]
    | Annotated[HostedTool, Tag(_HOSTED_TAG)]
    | Annotated[McpTools, Tag(_MCP_TAG)],
    Discriminator(_tool_kind),
]


def _names(tool: BuiltinTool | HostedTool | McpTools) -> list[str]:
    if isinstance(tool, BuiltinTool):
        return [tool.builtin]
    return tool.named() if isinstance(tool, McpTools) else [tool.name]


class MemorySettings(BaseModel):
    """`memory:`: whether the agent keeps facts about the person (the `remember` and `forget`
    tools, the facts given at every run's start) and which model class writes thread summaries
    (the agent's own when left out; checked against the configured classes when saved)."""

    model_config = ConfigDict(extra="forbid")
    remember: bool = False
    summarize_with: Annotated[str, Field(min_length=1, max_length=100)] | None = None


def check_json_schema(v: dict[str, Any]) -> dict[str, Any]:
    """`v` if it is a valid JSON Schema (its metaschema's check), else a ValueError naming where."""
    validator = jsonschema.validators.validator_for(v, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(v)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise ValueError(f"is not a valid JSON Schema ({where or 'top level'}: {exc.message[:200]})") from None
    return v


class OutputSpec(BaseModel):
    """`output: {schema: ...}`: every answer of the agent is a JSON object valid against `schema`
    (loom/structured_output.py), given as the message's `data`."""

    model_config = ConfigDict(extra="forbid")
    schema_: dict[str, Any] = Field(alias="schema")

    @field_validator("schema_")
    @classmethod
    def _valid_object_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        check_json_schema(v)
        if v.get("type") != "object":
            raise ValueError("must describe an object (type: object): a reply is a JSON object")
        if len(json.dumps(v)) > 64 * 1024:
            raise ValueError("is larger than 64 KiB")
        return v


class A2ASettings(BaseModel):
    """`a2a:` in an agent file: whether the agent is published over A2A (heddle/interop/a2a_*.py)
    and what its agent card says of it. Off unless `publish: true`."""

    model_config = ConfigDict(extra="forbid")
    publish: Annotated[bool, Field(strict=True)] = False
    description: Annotated[str, Field(max_length=2000)] | None = None

class AgentFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=200)]
    model_class: Annotated[str, Field(min_length=1, max_length=100)]
    instructions: Annotated[str, Field(max_length=32_000)] = ""
    tools: list[ToolEntry] = Field(default_factory=list, max_length=64)
    memory: MemorySettings | None = None
    a2a: A2ASettings | None = None
    # The built-in `schedule_followup` tool (loom/tools/schedule.py): the agent may schedule a
    # follow-up message in its thread. Stored as the tools entry SCHEDULE_ENTRY.
    schedules: bool = False
    output: OutputSpec | None = None  # structured replies (loom/structured_output.py)

    @model_validator(mode="before")
    @classmethod
    def _stored_schedule_entry(cls, data: Any) -> Any:
        """A definition read back from the store (the API's agent JSON) names the built-in in
        its tools: the same agent as `schedules: true`."""
        if isinstance(data, dict) and isinstance(data.get("tools"), list) and SCHEDULE_ENTRY in data["tools"]:
            data = {**data, "tools": [t for t in data["tools"] if t != SCHEDULE_ENTRY], "schedules": True}
        return data

    @model_validator(mode="after")
    def _unique_names(self) -> AgentFile:
        """Each name the file writes down is one tool's: an MCP server's names included (a name
        only its server lists, under `tools: "*"`, is checked when a run reads that list)."""
        seen: dict[str, int] = {}
        connections: set[str] = set()
        for i, tool in enumerate(self.tools):
            if isinstance(tool, McpTools):
                if tool.mcp in connections:
                    raise ValueError(f"tools.{i}.mcp: connection {tool.mcp!r} is named twice")
                connections.add(tool.mcp)
            for name in _names(tool):
                if name in seen:
                    where = "twice" if seen[name] == i else f"in tools.{seen[name]} and tools.{i}"
                    raise ValueError(f"tools: {name!r} is listed {where}")
                seen[name] = i
        return self

    def mcp_entries(self) -> list[tuple[int, McpTools]]:
        return [(i, tool) for i, tool in enumerate(self.tools) if isinstance(tool, McpTools)]

    def output_schema(self) -> dict[str, Any] | None:
        return self.output.schema_ if self.output is not None else None

    def tool_dicts(self) -> list[dict[str, Any]]:
        return [_tool_dict(t) for t in self.tools] + ([dict(SCHEDULE_ENTRY)] if self.schedules else [])

    def memory_dict(self) -> dict[str, Any] | None:
        """As stored in `agents.memory` (None without a `memory:` section)."""
        return self.memory.model_dump() if self.memory is not None else None


class AgentFileError(ValueError):
    """A readable error naming each bad field, e.g. `tools.1.risk: Input should be 'low', ...`."""


def field_path(loc: tuple[Any, ...]) -> str:
    """`tools.0.risk` from pydantic's location, without its own steps (the union's tags and
    validator names such as `function-after[_rule_needs_approve(), HostedTool]`), which mean
    nothing to an author. The CLI, the console and the API name fields this one way."""
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and ("[" in p or p in _TAGS)))


def field_message(error: Any) -> str:
    """Pydantic's message for one error, in the author's words, with the bad value when short."""
    if error["type"] == "model_type":  # not a mapping at all
        return "each tool is a mapping: `builtin: identify`, `mcp: CONNECTION`, or name, description and path"
    message = error["msg"].removeprefix("Value error, ")
    if message.startswith("Input should be") and error.get("input") is not None and len(repr(error["input"])) < 60:
        message = f"{message} (got {error['input']!r})"
    return message


def _describe(exc: ValidationError) -> str:
    lines = [f"{field_path(e['loc']) or '(file)'}: {field_message(e)}" for e in exc.errors()]
    return "; ".join(dict.fromkeys(lines))


def parse_agent_file(text: str, *, filename: str = "agent.yaml") -> AgentFile:
    try:
        data = json.loads(text) if filename.endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if filename.endswith(".json") else "YAML"
        raise AgentFileError(f"{filename}: not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise AgentFileError(f"{filename}: must be a mapping with name, model_class, instructions and tools")
    try:
        return AgentFile.model_validate(data)
    except ValidationError as exc:
        raise AgentFileError(f"{filename}: {_describe(exc)}") from exc


def load_agent_file(path: str | Path) -> AgentFile:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise AgentFileError(f"{p}: cannot read: {exc.strerror}") from exc
    return parse_agent_file(text, filename=p.name)


def _tool_dict(tool: BuiltinTool | HostedTool | McpTools) -> dict[str, Any]:
    if isinstance(tool, McpTools):  # stored as written: settings the author left out stay out
        return tool.model_dump(exclude_none=True)
    data = tool.model_dump()
    if data.get("approve_when", "absent") is None:
        del data["approve_when"]  # agents stored before approvals keep their exact shape
    return data
