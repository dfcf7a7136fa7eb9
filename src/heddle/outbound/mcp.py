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
`notifications/tools/list_changed`; the cache is bounded in bytes (each list weighs its JSON
plus about a kilobyte per parsed tool), not only in entries. Each list or call is one short MCP session
(initialize, request, close), so nothing is held open between a run's steps, and each is
bounded as a whole: a deadline including reconnects and resumptions, bytes, pages and tools of
a list (heddle/outbound/mcp_limits.py; the wire side is heddle/outbound/mcp_bridge.py).

Causes are reported as they are: a JSON-RPC error's code and message when the server gave one,
an HTTP status only when a request that mattered was refused without one, and each bound as
its own code.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import httpx2
import jsonschema
from cachetools import TTLCache
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from heddle.outbound.exchange import MAX_ERROR_MESSAGE
from heddle.outbound.mcp_bridge import Bridge
from heddle.outbound.mcp_causes import McpCallResult, call_fate, find, session_failure
from heddle.outbound.mcp_limits import (
    DEADLINE_EXCEEDED,
    LIMIT_CODES,
    TOO_MANY_PAGES,
    TOO_MANY_TOOLS,
    McpLimits,
    listed_size,
    weight,
)
from heddle.outbound.signing import UNIQUE_TIMESTAMPS, UniqueTimestamps

CLIENT_INFO = types.Implementation(name="heddle", version="1.0")


@dataclass(frozen=True)
class McpTool:
    """One tool as the server lists it; ``annotations`` keep the wire names (destructiveHint…)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]


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


@dataclass(frozen=True)
class _Listed:
    """A cached tool list and its weight for the cache (mcp_limits.weight: its JSON and its tools)."""

    tools: tuple[McpTool, ...]
    size: int


class McpClient:
    """Lists and calls the tools of MCP servers through Heddle's guarded outbound client.

    One per process, like the outbound client it wraps; per-workspace and per-subject
    credentials come with each call. ``ttl`` bounds how long a tool list is trusted, ``limits``
    how much of a server is taken in; ``metrics`` (heddle.observability.metrics.Metrics) counts
    each bound that stops a session and gauges the cache's bytes.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        ttl: float = 300.0,
        limits: McpLimits | None = None,
        metrics: Any = None,
        clock: Callable[[], float] = time.monotonic,
        timestamps: UniqueTimestamps = UNIQUE_TIMESTAMPS,
    ):
        self._http = http
        self._timestamps = timestamps
        self.limits = limits or McpLimits()
        self._metrics = metrics
        self._clock = clock
        self._tools: TTLCache[tuple[str, str], _Listed] = TTLCache(
            self.limits.cache_bytes, ttl, timer=clock, getsizeof=listed_size
        )
        # Lists refused at a bound, by (connection, url): their error, for refusal_seconds.
        self._refused: TTLCache[tuple[str, str], dict[str, str]] = TTLCache(
            4096, self.limits.refusal_seconds, timer=clock
        )

    def forget(self, url: str, scope: str = "") -> None:
        """Drop a cached tool list (the server said it changed)."""
        self._tools.pop((scope, url), None)
        self._gauge()

    @property
    def cache_bytes(self) -> int:
        return int(self._tools.currsize)

    def _gauge(self) -> None:
        if self._metrics is not None:
            self._metrics.mcp_cache_bytes.set(self._tools.currsize)

    def _limit_hit(self, code: str) -> None:
        if self._metrics is not None:
            self._metrics.mcp_limits.labels(code).inc()

    def _bridge(self, request_secret: str, max_bytes: int = 0) -> Bridge:
        return Bridge(self._http, request_secret, self._timestamps, self.limits, max_bytes=max_bytes,
                      on_limit=self._limit_hit, clock=self._clock)

    async def list_tools(
        self, url: str, *, request_secret: str, bearer: str | None = None, scope: str = ""
    ) -> tuple[McpTool, ...]:
        """Every tool of the server at ``url``, following `nextCursor` within the limits; cached
        under (``scope``, ``url``): give ``"CONNECTION:SUBJECT"`` as ``scope``.

        A list refused at a bound is remembered for the connection (whatever the subject) for
        `limits.refusal_seconds`: a run asking again fails at once rather than fetching and
        parsing megabytes again, and new subjects do not buy new fetches."""
        cached = self._tools.get((scope, url))
        if cached is not None:
            return cached.tools
        refusal_key = (scope.partition(":")[0], url)
        if (refused := self._refused.get(refusal_key)) is not None:
            raise McpUnavailable(refused["code"], refused["message"], retryable=False)
        try:
            return await self._list(url, request_secret, bearer, scope)
        except McpUnavailable as exc:
            if exc.error["code"] in LIMIT_CODES:
                self._refused[refusal_key] = exc.error
            raise

    async def _list(self, url: str, request_secret: str, bearer: str | None, scope: str) -> tuple[McpTool, ...]:
        bridge = self._bridge(request_secret, max_bytes=self.limits.max_list_bytes)
        try:
            with anyio.fail_after(bridge.remaining()):
                async with self._session(url, bearer, bridge, scope) as session:
                    tools = await _all_tools(session, self.limits, bridge)
        except Exception as exc:  # the SDK's errors, or a transport failure inside its task group
            if (bound := find(exc, McpUnavailable)) is not None:
                raise McpUnavailable(bound.error["code"], bound.error["message"], retryable=bound.retryable) from None
            if isinstance(exc, TimeoutError) and bridge.limit is None:
                bridge.over(DEADLINE_EXCEEDED, f"listing the tools took longer than {self.limits.deadline_seconds:g} s")
            failure = session_failure(bridge, exc)
            raise McpUnavailable(failure.error.code, failure.error.message, retryable=failure.retryable) from None
        try:
            self._tools[(scope, url)] = _Listed(tools, weight(bridge.bytes_read, len(tools)))
        except ValueError:  # larger than the whole cache: used once, not kept
            pass
        self._gauge()
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
        bridge = self._bridge(request_secret)
        try:
            with anyio.fail_after(bridge.remaining()):
                async with self._session(url, bearer, bridge, scope) as session:
                    # send_request, not call_tool: call_tool re-lists the tools after the answer
                    # to check it against an output schema, a round trip per call that the cached
                    # list makes needless (and a warning when the tool is on a later page).
                    request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
                    result = await session.send_request(request, types.CallToolResult)
        except Exception as exc:
            if isinstance(exc, TimeoutError) and bridge.limit is None:
                failure = bridge.over(DEADLINE_EXCEEDED, f"the call took longer than "
                                      f"{self.limits.deadline_seconds:g} s", is_call=bridge.call_status is not None,
                                      sent=bridge.call_status is not None)
                if bridge.call_status is None:  # not sent: nothing happened
                    return McpCallResult("failed", error=failure.error.as_dict(), retryable=True)
            return call_fate(bridge, exc)
        return _answer(result)

    @asynccontextmanager
    async def _session(self, url: str, bearer: str | None, bridge: Bridge, scope: str) -> AsyncIterator[ClientSession]:
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


async def _all_tools(session: ClientSession, limits: McpLimits, bridge: Bridge) -> tuple[McpTool, ...]:
    tools: list[McpTool] = []
    cursor: str | None = None
    for _ in range(limits.max_pages):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        if len(tools) + len(page.tools) > limits.max_tools:
            bridge.over(TOO_MANY_TOOLS, f"the server lists more than {limits.max_tools} tools")
            raise McpUnavailable(TOO_MANY_TOOLS, f"the server lists more than {limits.max_tools} tools",
                                 retryable=False)
        for tool in page.tools:
            annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
            tools.append(McpTool(tool.name, tool.description or "", dict(tool.input_schema), annotations))
        cursor = page.next_cursor
        if not cursor:
            return tuple(tools)
    bridge.over(TOO_MANY_PAGES, f"tools/list went on past {limits.max_pages} pages")
    raise McpUnavailable(TOO_MANY_PAGES, f"tools/list went on past {limits.max_pages} pages", retryable=False)


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
