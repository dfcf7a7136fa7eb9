"""`/mcp`: Identify, and Loom's read-only calls, as Model Context Protocol tools for a workspace key.

The protocol is the official `mcp` SDK's low-level server over Streamable HTTP, in stateless
JSON mode: every POST is answered on its own, so any `heddle serve` process (and any worker
of one) can answer any request, with no session to pin, keep or expire.

The HTTP request is authenticated first, exactly like `POST /v1/identify`
(`Authorization: Bearer sk_…`, its rate limits, the request log; a refusal is the API's
error envelope). Then `identify` takes the body of `POST /v1/identify` as its arguments,
validates it with the same model, and bills through the same `identify_and_charge`: only an
`identified` result costs a credit. Its structured result is the HTTP API's `data`; an error
(bad arguments, no credits) is a tool error whose structured content is the API's error
envelope, so a model can read the code and the fields to fix.

`get_run_trace` is `GET /v1/loom/runs/{id}/trace` for the key's workspace (a key sees every run
of its workspace, as a relay call without `Service-Subject` does): another workspace's run, or
none, is the API's `not_found`, never a hint that it exists. It is free, like the HTTP read.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from fastapi.exceptions import RequestValidationError
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from starlette.requests import Request

from heddle import API_VERSION
from heddle.api.deps import services, workspace_key_auth
from heddle.api.errors import invalid_request
from heddle.auth.context import AuthContext
from heddle.errors import HeddleError
from heddle.identify.charging import IdentifyCharging, identify_and_charge
from heddle.identify.schemas import IdentifyRequest, IdentifyResult
from heddle.loom import views
from heddle.loom.schemas import Trace
from heddle.mcp_server.streams import McpStreams
from heddle.process_services import database


@dataclass(frozen=True)
class _Caller:
    auth: AuthContext
    charging: IdentifyCharging
    request: Request  # its database, for the read-only Loom tools


# The authenticated caller of the HTTP request being served; the SDK runs the tool in a task
# started from inside that request, which inherits this context.
_CALLER: ContextVar[_Caller] = ContextVar("heddle_mcp_caller")

IDENTIFY_TOOL = types.Tool(
    name="identify",
    title="Identify an account identifier",
    description=(
        "Resolve a BIC, IBAN, routing number, sort code, IFSC, NUBAN, mobile-money wallet or Ghana "
        "bank code to its institution, its reachable rails and, on some rails, the holder name. "
        "Arguments are the body of POST /v1/identify. Only an `identified` result is billed."
    ),
    input_schema=IdentifyRequest.model_json_schema(),
    output_schema=IdentifyResult.model_json_schema(),
    annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
)
TRACE_TOOL = types.Tool(
    name="get_run_trace",
    title="A run's trace",
    description=(
        "A Loom run of this workspace with its turns, tool calls (name, kind, arguments, result, "
        "approval, outcome, credits) and attributed API calls: GET /v1/loom/runs/{run_id}/trace."
    ),
    input_schema={
        "type": "object",
        "properties": {"run_id": {"type": "string", "format": "uuid", "description": "The run's id."}},
        "required": ["run_id"],
        "additionalProperties": False,
    },
    output_schema=Trace.model_json_schema(),
    annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
)
TOOLS = [IDENTIFY_TOOL, TRACE_TOOL]
# Stateless and answered over plain HTTP: a browser cannot use a workspace key here anyway
# (the relay check refuses a secret sent with an Origin), so no Host/Origin allow-list.
_TRANSPORT = TransportSecuritySettings(enable_dns_rebinding_protection=False)


async def _list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    caller = _CALLER.get()
    if params.name == TRACE_TOOL.name:
        return await _trace(caller, params.arguments or {})
    if params.name != IDENTIFY_TOOL.name:
        raise _unknown_tool(params.name)
    try:
        body = IdentifyRequest.model_validate(params.arguments or {})
        data, _ = await identify_and_charge(
            caller.charging,
            workspace_id=caller.auth.workspace_id,
            key_id=caller.auth.key_id,
            request=body,
            balance_hint=caller.auth.workspace.balance_micro,
        )
    except ValidationError as exc:
        return _tool_error(invalid_request(_as_body_errors(exc)))
    except HeddleError as err:
        return _tool_error(err)
    # The HTTP API's `data`, serialized as its response model does (unknown fields omitted).
    result = IdentifyResult.model_validate(data).model_dump(mode="json", by_alias=True, exclude_none=True)
    return _answer(result)


async def _trace(caller: _Caller, arguments: dict[str, Any]) -> types.CallToolResult:
    run_id = arguments.get("run_id")
    if not isinstance(run_id, str) or set(arguments) != {"run_id"}:
        return _tool_error(HeddleError("invalid_request", "arguments: exactly `run_id`, a run's id (a UUID)."))
    try:
        async with database(caller.request).session() as session:
            data = await views.get_trace(session, caller.auth, run_id)
    except HeddleError as err:  # not_found: none, or another workspace's
        return _tool_error(err)
    return _answer(Trace.model_validate(data).model_dump(mode="json", by_alias=True))


def _answer(result: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=_json(result))], structured_content=result, is_error=False
    )


def _as_body_errors(exc: ValidationError) -> RequestValidationError:
    """The model's errors located in the body, as FastAPI reports them for POST /v1/identify."""
    return RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])


def _tool_error(err: HeddleError) -> types.CallToolResult:
    envelope = err.envelope()
    return types.CallToolResult(
        content=[types.TextContent(text=_json(envelope))], structured_content=envelope, is_error=True
    )


def _unknown_tool(name: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"Unknown tool {name!r}: this server has `identify` and `get_run_trace`.")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


SERVER = Server("heddle", version=API_VERSION, on_list_tools=_list_tools, on_call_tool=_call_tool)


class McpEndpoint:
    """The ASGI app at /mcp: authenticate like the API, then let the SDK answer.

    An instance, not a function, so that Starlette's Route passes it the raw ASGI call. A GET
    (the optional event stream) is counted, capped and ended like the other event streams
    (heddle/mcp_server/streams.py)."""

    def __init__(self) -> None:
        self._streams: McpStreams | None = None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        request = Request(scope, receive)
        auth = await workspace_key_auth(request)  # HeddleError -> the API's envelope (401, 429, …)
        token = _CALLER.set(_Caller(auth, services(request).identify_charging, request))
        try:
            if request.method == "GET":
                address = request.client.host if request.client else None
                release = request.app.state.services.streams.acquire(auth, address)  # 429 past a cap
                try:
                    await self._streams_of(request).serve(database(request), auth.key_id, scope, receive, send,
                                                          _answer_with_sdk)
                finally:
                    release()
            else:
                await _answer_with_sdk(scope, receive, send)
        finally:
            _CALLER.reset(token)

    def _streams_of(self, request: Request) -> McpStreams:
        if self._streams is None:
            settings = services(request).settings
            self._streams = McpStreams(max_seconds=settings.mcp_stream_max_seconds,
                                       check_seconds=settings.mcp_stream_check_seconds)
        return self._streams


async def _answer_with_sdk(scope: dict, receive: Any, send: Any) -> None:
    # Stateless: a manager per request is a transport per request, which the SDK makes anyway in
    # this mode; its run() scope is this request's.
    manager = StreamableHTTPSessionManager(app=SERVER, json_response=True, stateless=True, security_settings=_TRANSPORT)
    async with manager.run():
        await manager.handle_request(scope, receive, send)
