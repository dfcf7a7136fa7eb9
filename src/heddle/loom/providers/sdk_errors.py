"""Turn the official SDKs' exceptions into retry decisions with messages safe to store.

Both SDKs (openai, anthropic) share one exception layout: `APIStatusError` with `status_code`,
`response` and a decoded `body`; `APITimeoutError` under `APIConnectionError`; and a base error
for everything else. Retryable: 429 (honouring Retry-After), every 5xx (Anthropic's 529
"overloaded" included), timeouts and connection errors. Any other 4xx, and anything the SDK
could not make sense of, fails at once.

Messages never carry the API key: servers sometimes echo it ("Incorrect API key provided:
sk-..."), so every configured secret is masked before a message leaves this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientConnectionError, ClientOSError

from heddle.loom.providers.base import ModelProviderError
from heddle.loom.providers.retry import AttemptFailure, parse_retry_after

MAX_MESSAGE_CHARS = 300
REDACTED = "[redacted]"


@dataclass(frozen=True)
class SdkErrorTypes:
    status: type[Exception]  # APIStatusError
    timeout: type[Exception]  # APITimeoutError
    connection: type[Exception]  # APIConnectionError
    base: type[Exception]  # OpenAIError / AnthropicError


def redact(text: str, secrets: Iterable[str | None]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE_CHARS:
        return text[: MAX_MESSAGE_CHARS - 3] + "..."
    return text


def _api_message(body: object) -> str | None:
    """The human message inside an error body: `{"error": {"message"}}` or `{"message"}`."""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(inner, str):
            return inner
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str) and body.strip():
        return body
    return None


def is_retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


def status_code(status: int) -> str:
    """The error code of a refused attempt: three words, so metric labels stay bounded."""
    if status == 429:
        return "rate_limited"
    return "server_error" if status >= 500 else "refused"


def make_classifier(
    types: SdkErrorTypes, *, secrets: Iterable[str | None], timeout: float
) -> Callable[[Exception], AttemptFailure]:
    hidden = tuple(secret for secret in secrets if secret)

    def classify(exc: Exception) -> AttemptFailure:
        if isinstance(exc, types.status):
            status = int(getattr(exc, "status_code", 0) or 0)
            response: Any = getattr(exc, "response", None)
            headers = dict(response.headers) if response is not None else {}
            detail = _api_message(getattr(exc, "body", None)) or str(exc)
            message = _shorten(redact(f"HTTP {status}: {detail}", hidden))
            retryable = is_retryable_status(status)
            retry_after = parse_retry_after(headers) if retryable else None
            return AttemptFailure(message, retryable, status=status, retry_after=retry_after,
                                  code=status_code(status))
        refused = _refused(exc)
        if isinstance(exc, types.timeout) and refused is None:
            return AttemptFailure(f"request timed out after {timeout:g}s", retryable=True, code="timeout")
        if isinstance(exc, types.connection):
            cause = refused or exc.__cause__ or exc
            reason = _shorten(redact(str(cause) or type(cause).__name__, hidden))
            return AttemptFailure(f"connection failed: {reason}", retryable=True, code="connection",
                                  unsent=_unsent(refused))
        if isinstance(exc, types.base):
            reason = _shorten(redact(str(exc) or type(exc).__name__, hidden))
            return AttemptFailure(f"unusable response: {reason}", retryable=False, code="unusable")
        raise exc

    return classify


def _refused(exc: BaseException) -> BaseException | None:
    """The aiohttp connection error behind `exc` that was not a timeout (refused, reset, the
    server gone), else None. The OpenAI SDK's aiohttp transport (loom/providers/openai_compat.py)
    maps every aiohttp connection error to a connect *timeout*, so a refused connection would
    read "request timed out after 60s" in the trace."""
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, ClientConnectionError):
            return None if isinstance(cause, TimeoutError) else cause
        cause = cause.__cause__
    return None


def _unsent(cause: BaseException | None) -> bool:
    """aiohttp could not write the request's body: the server never had the whole request (a
    pooled connection it closed as we took it), so it cannot have acted on it."""
    return isinstance(cause, ClientOSError) and (cause.strerror or "").startswith("Can not write request body")


def response_body(parsed: object, label: str) -> dict[str, Any]:
    """The SDK's parsed reply as a plain JSON dict (the SDK returns text for a non-JSON body)."""
    to_dict = getattr(parsed, "to_dict", None)
    if to_dict is None:
        raise ModelProviderError(f"{label}: the response was not JSON")
    try:
        body = to_dict(mode="json", warnings=False)
    except Exception as exc:
        raise ModelProviderError(f"{label}: unreadable response: {exc}") from exc
    if not isinstance(body, dict):
        raise ModelProviderError(f"{label}: the response was not a JSON object")
    return body
