"""Agents and their versions, for the CLI and the console.

An agent file arrives as YAML/JSON text (CLI `--file`, console `{"yaml": …}`) or as a parsed
mapping (console JSON body); both go through the same `AgentFile` validation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.control.errors import invalid, not_found
from heddle.control.workspaces import workspace
from heddle.errors import HeddleError
from heddle.loom import agents as agent_service
from heddle.loom.agent_file import AgentFile, AgentFileError, field_message, field_path, parse_agent_file
from heddle.loom.models import Agent
from heddle.timeutil import iso


def parse_spec(body: dict[str, Any]) -> AgentFile:
    """An agent file given as a JSON object, or as `{"yaml": "<text>"}`; 400 naming each bad field."""
    if set(body) == {"yaml"}:
        if not isinstance(body["yaml"], str):
            raise invalid("yaml", "yaml: must be the agent file's text")
        try:
            return parse_agent_file(body["yaml"], filename="agent.yaml")
        except AgentFileError as exc:
            raise invalid("yaml", str(exc)) from None
    try:
        return AgentFile.model_validate(body)
    except ValidationError as exc:
        details = [{"location": "body", "field": field_path(e["loc"]) or None, "message": field_message(e),
                    "type": e["type"]} for e in exc.errors()]
        fields = ", ".join(sorted({d["field"] or "body" for d in details}))
        raise HeddleError("invalid_request", f"Invalid agent file: check {fields}.", details=details) from None


async def _checked(call):
    try:
        return await call
    except AgentFileError as exc:
        message = str(exc)
        raise invalid(message.partition(":")[0] or None, message) from None


async def agent(session: AsyncSession, workspace_id: str, agent_id: str) -> Agent:
    await workspace(session, workspace_id)
    found = await agent_service.get_agent(session, workspace_id, agent_id)
    if found is None:
        raise not_found("agent", agent_id)
    return found


async def agent_anywhere(session: AsyncSession, agent_id: str) -> Agent:
    """The CLI names an agent by id alone (its id is unique across workspaces)."""
    found = await session.get(Agent, agent_id)
    if found is None:
        raise not_found("agent", agent_id)
    return found


async def list_agents(session: AsyncSession, workspace_id: str) -> dict[str, Any]:
    ws = await workspace(session, workspace_id)
    rows = await agent_service.list_agents(session, ws.id)
    return {"items": [agent_service.agent_dict(a) for a in reversed(rows)]}


async def create(session: AsyncSession, workspace_id: str, spec: AgentFile, model_classes: Iterable[str],
                 *, created_by: str | None) -> dict[str, Any]:
    ws = await workspace(session, workspace_id)
    created = await _checked(agent_service.create_agent(session, ws.id, spec, model_classes, created_by=created_by))
    return agent_service.agent_dict(created)


async def show(session: AsyncSession, found: Agent) -> dict[str, Any]:
    versions = await agent_service.list_versions(session, found.id)
    return {**agent_service.agent_dict(found),
            "versions": [{"version": v.version, "created_at": iso(v.created_at), "created_by": v.created_by}
                         for v in versions]}


async def update(session: AsyncSession, found: Agent, spec: AgentFile, model_classes: Iterable[str],
                 *, created_by: str | None) -> dict[str, Any]:
    updated = await _checked(agent_service.update_agent(session, found, spec, model_classes, created_by=created_by))
    return agent_service.agent_dict(updated)


async def version(session: AsyncSession, found: Agent, number: int) -> dict[str, Any]:
    row = await agent_service.get_version(session, found.id, number)
    if row is None:
        raise not_found(f"version of agent {found.id}:", number)
    return agent_service.version_dict(row)
