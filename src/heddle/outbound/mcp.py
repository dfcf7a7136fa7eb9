"""A client of the caller's Model Context Protocol server (a connection of kind `mcp`).

The protocol is the official `mcp` SDK's (Streamable HTTP transport, `ClientSession`); this
module adds what Heddle's outbound calls have everywhere else:

* **The guarded network.** The SDK speaks through an httpx2 client; its transport here is a
  bridge onto Heddle's outbound httpx client (`build_outbound_client`), so the SSRF guard,
  https-only in production, the response cap and the total deadline of every outbound call
  apply to every MCP request (POST, the GET event stream, the closing DELETE) alike.
* **Both identities.** Each HTTP request carries the subject's session token as
  `Authorization: Bearer` (the user) and `Service-Signature` (Heddle), signed exactly like a
  signed-HTTP tool call: ``t.METHOD.target.base64(sha256(body))`` with the workspace's
  request secret, where ``body`` is the JSON-RPC message as sent (empty for GET and DELETE).
  A server verifies both with `heddle.toolhost.ToolHostVerifier` (docs/tool-hosts.md).
* **Fates.** A `tools/call` whose bytes may have left and whose answer never came is
  ``unknown`` (the run waits for an outcome when the tool is at-most-once); one that failed
  before any byte left is ``failed`` and safe to retry. The bridge watches the wire to tell.

Tool lists are cached per connection for a TTL and dropped when the server sends
`notifications/tools/list_changed`. Each list or call is one short MCP session (initialize,
request, close), so nothing is held open between a run's steps.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import httpx2
import jsonschema
from cachetools import TTLCache
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from heddle.outbound.exchange import MAX_ERROR_MESSAGE, AttemptFailed, send_failure
from heddle.outbound.hosted_tools import FATE_UNKNOWN_STATUSES
from heddle.outbound.retry import RETRYABLE_STATUSES
from heddle.outbound.safe_http import ResponseTooLarge
from heddle.outbound.signing import SIGNATURE_HEADER, UNIQUE_TIMESTAMPS, UniqueTimestamps, sign

MAX_PAGES = 50  # a server that pages tools/list past this is refused rather than followed forever
CLIENT_INFO = types.Implementation(name="heddle", version="1.0")
# Dropped on the way from the SDK's client to Heddle's: the outbound client sets its own.
_HOP_HEADERS = {b"host", b"content-length", b"user-agent", b"accept-encoding", b"connection", b"transfer-encoding"}
CallStatus = Literal["succeeded", "tool_error", "failed", "unknown"]


@dataclass(frozen=True)
class McpTool:
    """One tool as the server lists it; ``annotations`` keep the wire names (destructiveHint…)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]


@dataclass(frozen=True)
class McpCallResult:
    """What came of one `tools/call`.

    * ``succeeded``: ``result`` is the tool's `structuredContent`, else its text content.
    * ``tool_error``: the tool ran and said `isError`; ``result`` is what it said, for the model.
    * ``failed``: it did not run (refused before sending, a JSON-RPC error, bad arguments);
      ``retryable`` says whether trying again may help.
    * ``unknown``: sent, and no answer came: it may have run.
    """

    status: CallStatus
    result: Any = None
    error: dict[str, str] | None = None
    retryable: bool = False


class McpUnavailable(Exception):
    """The server's tools could not be listed."""

    def __init__(self, code: str, message: str, *, retryable: bool):
        super().__init__(f"{code}: {message}")
        self.error = {"code": code, "message": message[:MAX_ERROR_MESSAGE]}
        self.retryable = retryable


def settings_from_annotations(
    annotations: Mapping[str, Any] | None, explicit: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """Heddle's settings for an MCP tool: the agent file's ``explicit`` ones, else its hints.

    `destructiveHint` true -> interaction `approve`; `idempotentHint` true -> `idempotent`,
    anything else `at_most_once` (the safe reading of silence); `readOnlyHint` true -> risk
    `low`, a destructive tool `high`, any other `medium`. Only a literal ``true`` counts, and
    unknown annotations are ignored: hints come from the server and never loosen what the
    agent file says.
    """
    hints = annotations or {}
    destructive = hints.get("destructiveHint") is True
    derived = {
        "interaction": "approve" if destructive else "auto",
        "reliability": "idempotent" if hints.get("idempotentHint") is True else "at_most_once",
        "risk": "high" if destructive else "low" if hints.get("readOnlyHint") is True else "medium",
    }
    return {**derived, **{k: v for k, v in (explicit or {}).items() if k in derived and v is not None}}


def arguments_problem(schema: Mapping[str, Any], arguments: Any) -> str | None:
    """Why ``arguments`` do not match the tool's input schema, or None (JSON Schema, by the
    dialect the schema names; 2020-12, MCP's default, when it names none)."""
    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"the server's input schema is invalid: {exc.message}"
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where or 'arguments'}: {error.message}"[:MAX_ERROR_MESSAGE]


class McpClient:
    """Lists and calls the tools of MCP servers through Heddle's guarded outbound client.

    One per process, like the outbound client it wraps; per-workspace and per-subject
    credentials come with each call. ``ttl`` bounds how long a tool list is trusted.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        ttl: float = 300.0,
        max_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
        timestamps: UniqueTimestamps = UNIQUE_TIMESTAMPS,
    ):
        self._http = http
        self._timestamps = timestamps
        self._tools: TTLCache[tuple[str, str], tuple[McpTool, ...]] = TTLCache(max_entries, ttl, timer=clock)

    def forget(self, url: str, scope: str = "") -> None:
        """Drop a cached tool list (the server said it changed)."""
        self._tools.pop((scope, url), None)

    async def list_tools(
        self, url: str, *, request_secret: str, bearer: str | None = None, scope: str = ""
    ) -> tuple[McpTool, ...]:
        """Every tool of the server at ``url``, following `nextCursor`; cached under
        (``scope``, ``url``): give the connection's id as ``scope``."""
        cached = self._tools.get((scope, url))
        if cached is not None:
            return cached
        bridge = _Bridge(self._http, request_secret, self._timestamps)
        try:
            async with self._session(url, bearer, bridge, scope) as session:
                tools = await _all_tools(session)
        except McpUnavailable:
            raise
        except Exception as exc:  # the SDK's errors, or a transport failure inside its task group
            failure = _session_failure(bridge, exc)
            raise McpUnavailable(failure.error.code, failure.error.message, retryable=failure.retryable) from None
        self._tools[(scope, url)] = tools
        return tools

    async def call_tool(
        self,
        url: str,
        name: str,
        arguments: dict[str, Any],
        *,
        request_secret: str,
        bearer: str | None = None,
        scope: str = "",
    ) -> McpCallResult:
        """`tools/call` after checking ``arguments`` against the tool's input schema."""
        try:
            tools = await self.list_tools(url, request_secret=request_secret, bearer=bearer, scope=scope)
        except McpUnavailable as exc:
            return McpCallResult("failed", error=exc.error, retryable=exc.retryable)
        tool = next((t for t in tools if t.name == name), None)
        if tool is None:
            return McpCallResult(
                "failed", error={"code": "unknown_tool", "message": f"the server lists no tool named {name!r}"}
            )
        problem = arguments_problem(tool.input_schema, arguments)
        if problem is not None:
            return McpCallResult("failed", error={"code": "invalid_arguments", "message": problem})
        bridge = _Bridge(self._http, request_secret, self._timestamps)
        try:
            async with self._session(url, bearer, bridge, scope) as session:
                # send_request, not call_tool: call_tool re-lists the tools after the answer
                # to check it against an output schema, a round trip per call that the cached
                # list makes needless (and a warning when the tool is on a later page).
                request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
                result = await session.send_request(request, types.CallToolResult)
        except Exception as exc:
            return _fate(bridge, exc)
        return _answer(result)

    @asynccontextmanager
    async def _session(self, url: str, bearer: str | None, bridge: _Bridge, scope: str) -> AsyncIterator[ClientSession]:
        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                self.forget(url, scope)

        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        async with (
            httpx2.AsyncClient(transport=bridge, headers=headers) as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write, message_handler=on_message, client_info=CLIENT_INFO) as session,
        ):
            await session.initialize()
            yield session


async def _all_tools(session: ClientSession) -> tuple[McpTool, ...]:
    tools: list[McpTool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for tool in page.tools:
            annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
            tools.append(McpTool(tool.name, tool.description or "", dict(tool.input_schema), annotations))
        cursor = page.next_cursor
        if not cursor:
            return tuple(tools)
    raise McpUnavailable("too_many_pages", f"tools/list went on past {MAX_PAGES} pages", retryable=False)


def _answer(result: types.CallToolResult) -> McpCallResult:
    if result.structured_content is not None:
        value: Any = result.structured_content
    else:
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        value = (
            "\n".join(texts)
            if len(texts) == len(result.content)
            else [block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in result.content]
        )
    return McpCallResult("tool_error" if result.is_error else "succeeded", result=value)


def _fate(bridge: _Bridge, exc: BaseException) -> McpCallResult:
    """What the wire says about a `tools/call` that raised."""
    failure = bridge.call_failure
    if failure is not None:
        return McpCallResult(
            "unknown" if failure.sent else "failed", error=failure.error.as_dict(), retryable=failure.retryable
        )
    if bridge.call_status is None:  # the session failed before the call was written
        failure = _session_failure(bridge, exc)
        return McpCallResult("failed", error=failure.error.as_dict(), retryable=failure.retryable)
    if bridge.call_status in FATE_UNKNOWN_STATUSES:
        return McpCallResult(
            "unknown", error={"code": "bad_gateway", "message": f"the server answered HTTP {bridge.call_status}"}
        )
    mcp_error = _find(exc, MCPError)
    if mcp_error is not None and mcp_error.error.code == types.CONNECTION_CLOSED:
        # The response stream ended without an answer: the server had the request.
        return McpCallResult("unknown", error={"code": "connection_lost", "message": mcp_error.error.message})
    if mcp_error is not None:
        return McpCallResult(
            "failed",
            error={"code": "mcp_error", "message": mcp_error.error.message[:MAX_ERROR_MESSAGE]},
            retryable=bridge.call_status >= 500,
        )
    return McpCallResult("unknown", error={"code": "mcp_error", "message": _describe(exc)})


def _session_failure(bridge: _Bridge, exc: BaseException) -> AttemptFailed:
    """Why a session failed before any `tools/call` was written: a transport failure, an HTTP
    refusal (the SDK reports a 401 as a bare JSON-RPC error, so the status is taken from the
    wire), or the SDK's own error."""
    if bridge.failure is not None:
        return bridge.failure
    if bridge.refused is not None:
        return AttemptFailed(
            "host_refused",
            f"the server answered HTTP {bridge.refused}",
            sent=True,
            retryable=bridge.refused in RETRYABLE_STATUSES,
        )
    return AttemptFailed("mcp_error", _describe(exc), sent=True)


def _find(exc: BaseException, kind: type[MCPError]) -> MCPError | None:
    if isinstance(exc, kind):
        return exc
    for inner in getattr(exc, "exceptions", ()):  # an ExceptionGroup from the SDK's task groups
        found = _find(inner, kind)
        if found is not None:
            return found
    return None


def _describe(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)
    if inner:
        return _describe(inner[0])
    return (str(exc) or type(exc).__name__)[:MAX_ERROR_MESSAGE]


def _jsonrpc_method(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


class _Bridge(httpx2.AsyncBaseTransport):
    """The SDK's httpx2 requests, signed and sent by Heddle's guarded httpx client.

    It also notes what the wire said about the session's `tools/call`: its HTTP status, or
    the failure that kept its answer from arriving (``sent`` false when no byte left).
    """

    def __init__(self, http: httpx.AsyncClient, secret: str, timestamps: UniqueTimestamps):
        self._http, self._secret, self._timestamps = http, secret, timestamps
        self.failure: AttemptFailed | None = None  # the latest failure of any request
        self.refused: int | None = None  # the latest HTTP status >= 400 of any request
        self.call_failure: AttemptFailed | None = None
        self.call_status: int | None = None

    def _failed(self, failure: AttemptFailed, is_call: bool) -> AttemptFailed:
        self.failure = failure
        if is_call:
            self.call_failure = failure
        return failure

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        is_call = request.method == "POST" and _jsonrpc_method(body) == "tools/call"
        headers = [(k, v) for k, v in request.headers.raw if k.lower() not in _HOP_HEADERS]
        try:
            outgoing = self._http.build_request(request.method, str(request.url), content=body or None, headers=headers)
            target = outgoing.url.raw_path.decode("ascii")
            t = self._timestamps.next(request.method, target, body)
            outgoing.headers[SIGNATURE_HEADER] = sign(self._secret, request.method, target, body, t)
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            self._failed(AttemptFailed("invalid_url", str(exc), sent=False, retryable=False), is_call)
            raise httpx2.ConnectError(str(exc)) from None
        try:
            response = await self._http.send(outgoing, stream=True, follow_redirects=False)
        except httpx.TransportError as exc:
            failure = self._failed(send_failure(exc), is_call)
            kind = httpx2.ConnectError if not failure.sent else httpx2.ReadError
            raise kind(failure.error.message) from None
        if is_call:
            self.call_status = response.status_code
        if response.status_code >= 400:
            self.refused = response.status_code
        return httpx2.Response(
            response.status_code, headers=response.headers.raw, stream=_Body(response, self, is_call), request=request
        )


class _Body(httpx2.AsyncByteStream):
    """A response body read through the guarded client; a failure mid-way is noted (sent)."""

    def __init__(self, response: httpx.Response, bridge: _Bridge, is_call: bool):
        self._response, self._bridge, self._is_call = response, bridge, is_call

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.RequestError as exc:
            code = (
                "timeout"
                if isinstance(exc, httpx.TimeoutException)
                else "response_too_large"
                if isinstance(exc, ResponseTooLarge)
                else "connection_lost"
            )
            failure = AttemptFailed(code, f"reading the response: {_describe(exc)}", sent=True)
            self._bridge._failed(failure, self._is_call)
            raise httpx2.ReadError(failure.error.message) from None

    async def aclose(self) -> None:
        await self._response.aclose()
