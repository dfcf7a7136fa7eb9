"""The console's control-plane API under /console/api (docs/console.md), not in /openapi.json.

Every route needs an operator session (heddle.console.auth); the handlers are thin and call
heddle.control, the layer the CLI calls too.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from heddle.console import (
    routes_agents,
    routes_attachments,
    routes_credits,
    routes_improve,
    routes_playground,
    routes_runs,
    routes_schedules,
    routes_workspaces,
)
from heddle.console.auth import ConsoleOperator, clear_session_cookie, current_operator
from heddle.console.common import writing
from heddle.console.login import router as login_router
from heddle.operators import service as operators

api = APIRouter(prefix="/console/api", include_in_schema=False, dependencies=[Depends(current_operator)])


@api.get("/me")
async def me(operator: ConsoleOperator = Depends(current_operator)):
    return {"status": "success", "data": {"id": operator.id, "email": operator.email,
                                          "csrf_token": operator.csrf_token}}


@api.post("/logout")
async def logout(request: Request, operator: ConsoleOperator = Depends(current_operator)):
    async with writing(request) as s:
        await operators.end_session(s, operator.session_hash)
    response = JSONResponse({"status": "success", "data": {"logged_out": True}})
    clear_session_cookie(request, response)
    return response


for module in (routes_workspaces, routes_agents, routes_runs, routes_credits, routes_schedules, routes_improve,
               routes_playground, routes_attachments):
    api.include_router(module.router)

router = APIRouter(include_in_schema=False)
router.include_router(login_router)
router.include_router(api)
