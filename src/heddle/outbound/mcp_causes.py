"""What a failed MCP list or call reports as its cause, read from the SDK's error and the wire.

Causes are reported as they are: the server's JSON-RPC error (its code and message) when it gave
one; a bound that stopped the session as its own code (heddle/outbound/mcp_limits.py); an HTTP
status only when a request that mattered (a POST, or a resumption: never the optional GET event
stream, which a server may answer 405) was refused without a JSON-RPC error; and for a
`tools/call`, whether it may have run (``unknown``) or surely did not (``failed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mcp import types
from mcp.shared.exceptions import MCPError

from heddle.outbound.exchange import MAX_ERROR_MESSAGE, AttemptFailed
from heddle.outbound.hosted_tools import FATE_UNKNOWN_STATUSES
from heddle.outbound.mcp_bridge import Bridge, describe
from heddle.outbound.retry import RETRYABLE_STATUSES

CallStatus = Literal["succeeded", "tool_error", "failed", "unknown"]
# The SDK's stand-ins for an HTTP refusal without a JSON-RPC error in its body: then the
# status is the cause (streamable_http._handle_post_request).
_SDK_STAND_INS = {"Server returned an error response", "Session terminated", "Not Found"}


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



def call_fate(bridge: Bridge, exc: BaseException) -> McpCallResult:
    """What the wire says about a `tools/call` that raised."""
    failure = bridge.call_failure
    if failure is not None:
        return McpCallResult(
            "unknown" if failure.sent else "failed", error=failure.error.as_dict(), retryable=failure.retryable
        )
    if bridge.call_status is None:  # the session failed before the call was written
        failure = session_failure(bridge, exc)
        return McpCallResult("failed", error=failure.error.as_dict(), retryable=failure.retryable)
    mcp_error = find(exc, MCPError)
    if bridge.call_status in FATE_UNKNOWN_STATUSES and (mcp_error is None or _stand_in(mcp_error)):
        return McpCallResult(
            "unknown", error={"code": "bad_gateway", "message": f"the server answered HTTP {bridge.call_status}"}
        )
    if mcp_error is not None and _closed(mcp_error):
        # The response stream ended without an answer: the server had the request.
        return McpCallResult("unknown", error={"code": "connection_lost", "message": mcp_error.error.message})
    if mcp_error is not None:
        return McpCallResult(
            "failed", error=_jsonrpc_error(mcp_error), retryable=bridge.call_status >= 500
        )
    return McpCallResult("unknown", error={"code": "mcp_error", "message": describe(exc)})


def session_failure(bridge: Bridge, exc: BaseException) -> AttemptFailed:
    """Why a session failed before any `tools/call` was written: a bound, the server's own
    JSON-RPC error, a transport failure, an HTTP refusal of a request that mattered (the SDK
    reports one without a JSON-RPC body as a stand-in error, so the status is taken from the
    wire), or the SDK's own error."""
    if bridge.limit is not None and bridge.failure is not None:
        return bridge.failure
    mcp_error = find(exc, MCPError)
    if mcp_error is not None and not _stand_in(mcp_error) and not _closed(mcp_error):
        error = _jsonrpc_error(mcp_error)
        return AttemptFailed(error["code"], error["message"], sent=True, retryable=(bridge.refused or 0) >= 500)
    if bridge.failure is not None:
        return bridge.failure
    if bridge.refused is not None:
        return AttemptFailed(
            "host_refused",
            f"the server answered HTTP {bridge.refused}",
            sent=True,
            retryable=bridge.refused in RETRYABLE_STATUSES,
        )
    return AttemptFailed("mcp_error", describe(exc), sent=True)


def _stand_in(error: MCPError) -> bool:
    return error.error.message in _SDK_STAND_INS


def _closed(error: MCPError) -> bool:
    """The SDK's own "no answer came" (its code, -32000, is one a server may use for its own
    errors too: "backend database down" is the server's, "Connection closed" the SDK's)."""
    message = error.error.message
    return error.error.code == types.CONNECTION_CLOSED and (message == "Connection closed"
                                                            or message.startswith("SSE stream"))


def _jsonrpc_error(error: MCPError) -> dict[str, str]:
    """The server's JSON-RPC error as a call's or a run's cause: its code and its message."""
    message = f"the server answered JSON-RPC error {error.error.code}: {error.error.message}"
    return {"code": "mcp_error", "message": message[:MAX_ERROR_MESSAGE]}


def find(exc: BaseException, kind: type[BaseException]) -> Any:
    if isinstance(exc, kind):
        return exc
    for inner in getattr(exc, "exceptions", ()):  # an ExceptionGroup from the SDK's task groups
        found = find(inner, kind)
        if found is not None:
            return found
    return None
