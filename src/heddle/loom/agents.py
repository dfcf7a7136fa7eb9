"""Creating and reading agents (control plane); the engine reads them by id."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle import ids
from heddle.loom.agent_file import AgentFile, AgentFileError, HostedTool
from heddle.loom.models import Agent
from heddle.timeutil import iso
from heddle.workspaces.service import get_workspace, resolve_connection


async def create_agent(session: AsyncSession, workspace_id: str, spec: AgentFile,
                       known_model_classes: Iterable[str]) -> Agent:
    await get_workspace(session, workspace_id)
    known = sorted(set(known_model_classes))
    if spec.model_class not in known:
        raise AgentFileError(f"model_class: unknown model class {spec.model_class!r} "
                             f"(configured: {', '.join(known)})")
    for i, tool in enumerate(spec.tools):
        if isinstance(tool, HostedTool) and tool.connection is not None:
            if await resolve_connection(session, workspace_id, tool.connection) is None:
                raise AgentFileError(f"tools.{i}.connection: no connection {tool.connection!r} in "
                                     f"workspace {workspace_id}; create it first")
    agent = Agent(id=ids.agent_id(), workspace_id=workspace_id, name=spec.name,
                  model_class=spec.model_class, instructions=spec.instructions,
                  tools=spec.tool_dicts())
    session.add(agent)
    await session.flush()
    return agent


async def get_agent(session: AsyncSession, workspace_id: str, agent_id: str) -> Agent | None:
    return await session.scalar(
        select(Agent).where(Agent.id == agent_id, Agent.workspace_id == workspace_id))


async def list_agents(session: AsyncSession, workspace_id: str) -> list[Agent]:
    return list(await session.scalars(
        select(Agent).where(Agent.workspace_id == workspace_id).order_by(Agent.created_at)))


def has_unpinned_hosted_tools(agent: Agent) -> bool:
    return any("builtin" not in t and not t.get("connection") for t in agent.tools)


def agent_dict(agent: Agent) -> dict[str, Any]:
    return {"id": agent.id, "workspace_id": agent.workspace_id, "name": agent.name,
            "model_class": agent.model_class, "instructions": agent.instructions,
            "tools": agent.tools, "created_at": iso(agent.created_at)}
