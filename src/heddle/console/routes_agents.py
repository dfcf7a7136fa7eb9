"""/console/api/workspaces/{ws}/agents…: agents, edits (each a new version) and their versions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Path, Request

from heddle.console.agent_yaml import agent_yaml
from heddle.console.auth import ConsoleOperator, current_operator
from heddle.console.common import ok, reading, success, writing
from heddle.control import agents as control
from heddle.loom.deps import model_registry

router = APIRouter()
WorkspaceId = Path(max_length=40)
AgentId = Path(max_length=40)
# The agent file as a JSON object, or {"yaml": "<the file's text>"}; checked by heddle.control.agents.
AgentBody = Body(..., description="name, model_class, instructions, tools; or {yaml}")


def _classes(request: Request) -> list[str]:
    return model_registry(request).names()


@router.get("/workspaces/{ws}/agents")
async def list_agents(request: Request, ws: str = WorkspaceId):
    async with reading(request) as s:
        return success(await control.list_agents(s, ws))


@router.post("/workspaces/{ws}/agents", status_code=201)
async def create_agent(request: Request, ws: str = WorkspaceId, body: dict[str, Any] = AgentBody,
                       operator: ConsoleOperator = Depends(current_operator)):
    spec = control.parse_spec(body)
    async with writing(request) as s:
        data = await control.create(s, ws, spec, _classes(request), created_by=operator.email)
    return ok(data, status_code=201)


@router.get("/workspaces/{ws}/agents/{agent}")
async def show_agent(request: Request, ws: str = WorkspaceId, agent: str = AgentId):
    async with reading(request) as s:
        data = await control.show(s, await control.agent(s, ws, agent))
    return success({**data, "yaml": agent_yaml(data)})


@router.put("/workspaces/{ws}/agents/{agent}")
async def update_agent(request: Request, ws: str = WorkspaceId, agent: str = AgentId,
                       body: dict[str, Any] = AgentBody, operator: ConsoleOperator = Depends(current_operator)):
    spec = control.parse_spec(body)
    async with writing(request) as s:
        found = await control.agent(s, ws, agent)
        data = await control.update(s, found, spec, _classes(request), created_by=operator.email)
    return success(data)


@router.get("/workspaces/{ws}/agents/{agent}/versions/{number}")
async def agent_version(request: Request, ws: str = WorkspaceId, agent: str = AgentId,
                        number: int = Path(ge=1, le=1_000_000)):
    async with reading(request) as s:
        data = await control.version(s, await control.agent(s, ws, agent), number)
    return success({**data, "yaml": agent_yaml(data)})
