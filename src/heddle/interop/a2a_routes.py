"""`/v1/a2a/{agent_id}`: a published Heddle agent as an A2A agent (docs/interop.md).

- `GET /v1/a2a/{agent_id}/.well-known/agent-card.json`: the agent card (a2a-sdk's types and
  serialiser: the v1.0 card with its v0.3 fields), for the agent's own workspace's key or
  session tokens only;
- `POST /v1/a2a/{agent_id}`: JSON-RPC, answered by a2a-sdk's `JsonRpcDispatcher` (v1.0 methods,
  and v0.3's `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, ... through its
  compatibility adapter) over heddle/interop/a2a_handler.py.

Only an agent whose file says `a2a: {publish: true}` answers; any other, or another workspace's,
is 404 `agent_not_found`, the same answer as an agent that does not exist (nothing leaks).
Authentication is the `/v1` Loom auth as it is (the workspace key plus `Service-Subject`, or a
session token), with its rate limits, before the dispatcher sees the request; a protocol-level
mistake (malformed JSON-RPC, an unknown method, a task of another workspace) is the JSON-RPC error
the protocol defines, inside a 200.
"""

from __future__ import annotations

from collections.abc import Callable

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from heddle.api.deps import loom_session
from heddle.api.operations import LOOM, operation, raw_request_body
from heddle.errors import HeddleError
from heddle.interop.a2a_handler import A2ACall, HeddleA2AHandler
from heddle.interop.a2a_tasks import agent_card
from heddle.interop.schemas import A2AJsonRpcRequest
from heddle.loom.agents import get_agent
from heddle.observability import tracing

router = APIRouter(prefix="/v1/a2a", tags=["interop"])


class _Context(DefaultServerCallContextBuilder):
    """a2a-sdk's call context, with the Heddle caller and agent the route authenticated."""

    def build(self, request) -> ServerCallContext:
        context = super().build(request)
        context.state["heddle"] = request.state.a2a_call
        return context


DISPATCHER = JsonRpcDispatcher(HeddleA2AHandler(), context_builder=_Context(), enable_v0_3_compat=True)

def _json_operation(description: str, **kwargs) -> dict:
    """`operation()` for a route whose 200 is the protocol's own JSON (no Heddle envelope)."""
    spec = operation(None, auth=LOOM, envelope=dict, **kwargs)
    spec["response_model"] = None
    spec["responses"][200] = {"description": description,
                              "content": {"application/json": {"schema": {"type": "object"}}}}
    return spec


async def _published(request: Request, agent_id: str, *, subject: bool):
    async with loom_session(request) as (auth, session):
        agent = await get_agent(session, auth.workspace_id, agent_id[:80])
    if agent is None or not (agent.a2a or {}).get("publish"):
        raise HeddleError("agent_not_found", f"No agent {agent_id[:80]!r} published over A2A in this workspace.")
    if subject:
        auth.require_subject()
    return auth, agent


@router.get("/{agent_id}/.well-known/agent-card.json", summary="The A2A agent card of a published agent",
            **_json_operation("The A2A AgentCard (v1.0, with the v0.3 fields)", errors=("agent_not_found",)))
async def a2a_card(agent_id: str, request: Request):
    _, agent = await _published(request, agent_id, subject=False)
    return JSONResponse(agent_card_to_dict(agent_card(agent, str(request.base_url))))


@router.post("/{agent_id}", summary="A2A JSON-RPC: send messages (and stream), get, list and cancel tasks",
             **_json_operation("A JSON-RPC response (for the streaming methods, Server-Sent Events of JSON-RPC "
                               "responses); protocol errors are JSON-RPC errors", headers=("Service-Subject",),
                               body=True, request_body=raw_request_body(A2AJsonRpcRequest),
                               errors=("agent_not_found", "subject_required")))
async def a2a_rpc(agent_id: str, request: Request):
    with tracing.span("a2a.request", {"heddle.interop.protocol": "a2a", "gen_ai.agent.id": agent_id[:80]}):
        auth, agent = await _published(request, agent_id, subject=True)
        request.state.a2a_call = A2ACall(auth, agent, request)
        release = None
        if await _streaming(request):  # counted with the run event streams (429 past a cap)
            release = request.app.state.services.streams.acquire(auth, request.client.host if request.client else None)
        try:
            response = await DISPATCHER.handle_requests(request)
        except BaseException:
            if release is not None:
                release()
            raise
        return _Counted(response, release) if release is not None else response


STREAMING_METHODS = {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}


async def _streaming(request: Request) -> bool:
    try:
        body = await request.json()  # Starlette keeps it: the dispatcher reads the same
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("method") in STREAMING_METHODS


class _Counted(Response):
    """The dispatcher's response (an SSE stream, or a JSON-RPC error), its stream counted out
    however it ends (loom/stream_limits.py CountedStreamingResponse does the same for Heddle's)."""

    def __init__(self, inner: Response, release: Callable[[], None]):
        self.inner, self._release = inner, release
        self.background = None
        self.status_code = inner.status_code

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.inner(scope, receive, send)
        finally:
            self._release()
