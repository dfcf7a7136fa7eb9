"""Creating, editing and reading agents (control plane); the engine reads the version a run recorded.

Every edit writes a new `agent_versions` row and bumps `agents.version`; `agents` keeps a copy of
the current definition so that reads need no join.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle import ids
from heddle.db.base import utcnow
from heddle.loom.agent_file import AgentFile, AgentFileError, HostedTool
from heddle.loom.models import Agent, AgentVersion
from heddle.timeutil import iso
from heddle.workspaces.service import get_workspace, resolve_connection


async def _check(session: AsyncSession, workspace_id: str, spec: AgentFile,
                 known_model_classes: Iterable[str]) -> None:
    known = sorted(set(known_model_classes))
    if spec.model_class not in known:
        raise AgentFileError(f"model_class: unknown model class {spec.model_class!r} "
                             f"(configured: {', '.join(known)})")
    if spec.memory is not None and spec.memory.summarize_with is not None and spec.memory.summarize_with not in known:
        raise AgentFileError(f"memory.summarize_with: unknown model class {spec.memory.summarize_with!r} "
                             f"(configured: {', '.join(known)})")
    for i, tool in enumerate(spec.tools):
        if isinstance(tool, HostedTool) and tool.connection is not None:
            if await resolve_connection(session, workspace_id, tool.connection) is None:
                raise AgentFileError(f"tools.{i}.connection: no connection {tool.connection!r} in "
                                     f"workspace {workspace_id}; create it first")
    for i, entry in spec.mcp_entries():
        connection = await resolve_connection(session, workspace_id, entry.mcp)
        if connection is None:
            raise AgentFileError(f"tools.{i}.mcp: no connection {entry.mcp!r} in workspace {workspace_id}; "
                                 "create it first (--kind mcp)")
        if connection.kind != "mcp":
            raise AgentFileError(f"tools.{i}.mcp: connection {entry.mcp!r} is of kind {connection.kind}, "
                                 "not mcp; name an MCP server's connection here")


def _version_row(agent: Agent, created_by: str | None) -> AgentVersion:
    return AgentVersion(agent_id=agent.id, version=agent.version, name=agent.name, model_class=agent.model_class,
                        instructions=agent.instructions, tools=agent.tools, memory=agent.memory,
                        output_schema=agent.output_schema, created_by=created_by,
                        created_at=utcnow())


async def create_agent(session: AsyncSession, workspace_id: str, spec: AgentFile,
                       known_model_classes: Iterable[str], *, created_by: str | None = None) -> Agent:
    await get_workspace(session, workspace_id)
    await _check(session, workspace_id, spec, known_model_classes)
    agent = Agent(id=ids.agent_id(), workspace_id=workspace_id, name=spec.name,
                  model_class=spec.model_class, instructions=spec.instructions,
                  tools=spec.tool_dicts(), memory=spec.memory_dict(), output_schema=spec.output_schema(),
                  a2a=spec.a2a.model_dump(exclude_none=True) if spec.a2a else None, version=1, created_at=utcnow())
    session.add(agent)
    await session.flush()
    session.add(_version_row(agent, created_by))
    await session.flush()
    return agent


async def update_agent(session: AsyncSession, agent: Agent, spec: AgentFile,
                       known_model_classes: Iterable[str], *, created_by: str | None = None) -> Agent:
    """A new version with this definition. Runs already started keep executing theirs."""
    await _check(session, agent.workspace_id, spec, known_model_classes)
    agent.name, agent.model_class = spec.name, spec.model_class
    agent.instructions, agent.tools = spec.instructions, spec.tool_dicts()
    agent.memory = spec.memory_dict()
    agent.output_schema = spec.output_schema()
    agent.a2a = spec.a2a.model_dump(exclude_none=True) if spec.a2a else None
    agent.version += 1
    session.add(_version_row(agent, created_by))
    await session.flush()
    return agent


async def list_versions(session: AsyncSession, agent_id: str) -> list[AgentVersion]:
    """The agent's saved versions, newest first (the playground's drafts, numbered below 1, are not)."""
    return list(await session.scalars(
        select(AgentVersion).where(AgentVersion.agent_id == agent_id, AgentVersion.version > 0)
        .order_by(AgentVersion.version.desc())))


async def save_draft(session: AsyncSession, agent: Agent, spec: AgentFile, known_model_classes: Iterable[str],
                     *, created_by: str | None = None) -> AgentVersion:
    """An unsaved definition the console's playground runs: a version numbered 0, -1, -2 … (never
    the agent's current one, never listed), so a run executes it as it executes any version and
    its trace keeps what it ran. The agent itself does not change."""
    await _check(session, agent.workspace_id, spec, known_model_classes)
    lowest = await session.scalar(select(func.min(AgentVersion.version)).where(AgentVersion.agent_id == agent.id))
    draft = AgentVersion(agent_id=agent.id, version=min(lowest or 1, 1) - 1, name=spec.name,
                         model_class=spec.model_class, instructions=spec.instructions, tools=spec.tool_dicts(),
                         created_by=created_by, created_at=utcnow())
    session.add(draft)
    await session.flush()
    return draft


async def get_version(session: AsyncSession, agent_id: str, version: int) -> AgentVersion | None:
    return await session.get(AgentVersion, (agent_id, version))


async def get_agent(session: AsyncSession, workspace_id: str, agent_id: str) -> Agent | None:
    return await session.scalar(
        select(Agent).where(Agent.id == agent_id, Agent.workspace_id == workspace_id))


async def list_agents(session: AsyncSession, workspace_id: str) -> list[Agent]:
    return list(await session.scalars(
        select(Agent).where(Agent.workspace_id == workspace_id).order_by(Agent.created_at)))


def has_unpinned_hosted_tools(agent: Agent) -> bool:
    return any("builtin" not in t and "mcp" not in t and not t.get("connection") for t in agent.tools)


def _output(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    return {"schema": schema} if schema is not None else None


def agent_dict(agent: Agent) -> dict[str, Any]:
    return {"id": agent.id, "workspace_id": agent.workspace_id, "name": agent.name,
            "model_class": agent.model_class, "instructions": agent.instructions,
            "tools": agent.tools, "memory": agent.memory, "output": _output(agent.output_schema),
            "version": agent.version, "created_at": iso(agent.created_at),
            **({"a2a": agent.a2a} if agent.a2a else {})}


def version_dict(v: AgentVersion) -> dict[str, Any]:
    return {"agent_id": v.agent_id, "version": v.version, "name": v.name, "model_class": v.model_class,
            "instructions": v.instructions, "tools": v.tools, "memory": v.memory,
            "output": _output(v.output_schema), "created_by": v.created_by,
            "created_at": iso(v.created_at)}
