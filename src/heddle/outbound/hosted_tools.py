"""Calling a tool hosted on the caller's backend (a connection), per its reliability.

* ``idempotent``: retried with backoff on network errors, timeouts, 408, 429 and 5xx, with
  the same `Idempotency-Key` on every attempt; the host deduplicates.
* ``at_most_once``: never retried. A failure before any byte was sent is ``failed`` (safe);
  a timeout or dropped connection after that, or a 502/504 from a gateway that may have
  forwarded the call, is ``unknown`` and the run waits for the caller to reconcile.

A 3xx is a failure (redirects are not followed). A 2xx must carry a JSON object, which
becomes the result; its ``patch_ref`` (the host's reference for a started side effect) is
kept when present.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from heddle.outbound.exchange import (
    AttemptFailed,
    AttemptLog,
    OutboundError,
    Reply,
    decode_json_object,
    encode_json,
    host_error_message,
    post_signed,
)
from heddle.outbound.retry import DEFAULT_RETRY, RETRYABLE_STATUSES, RetryPolicy, parse_retry_after

Reliability = Literal["idempotent", "at_most_once"]
CallStatus = Literal["succeeded", "failed", "unknown"]

MAX_PATCH_REF_LENGTH = 200
MAX_HEADER_VALUE = 8192
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
FATE_UNKNOWN_STATUSES = {502, 504}  # a gateway may have forwarded the call


@dataclass
class HostedCallResult:
    status: CallStatus
    result: dict[str, Any] | None = None
    """The host's JSON object: the tool result on success, its error body on a 4xx/5xx."""
    patch_ref: str | None = None
    http_status: int | None = None
    error: dict[str, str] | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)


def join_url(base_url: str, path: str) -> str:
    """``base_url`` (which may end in a path prefix) followed by the tool's absolute path."""
    try:
        base = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"base_url is malformed: {exc}") from None
    if base.scheme not in ("http", "https") or not base.host:
        raise ValueError("base_url must be an absolute http(s) URL")
    if base.query or base.fragment or base.userinfo:
        raise ValueError("base_url must not have a query, fragment or credentials")
    if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        raise ValueError("the tool path must start with a single '/'")
    if any(ch.isspace() or ord(ch) < 32 or ch in "#\\" for ch in path) or len(path) > 1024:
        raise ValueError("the tool path has whitespace, control characters, '#' or '\\'")
    if {".", ".."} & set(path.split("?", 1)[0].split("/")):
        raise ValueError("the tool path must not have '.' or '..' segments")
    return str(base).rstrip("/") + path


def _check_header_value(name: str, value: str) -> None:
    if not isinstance(value, str) or len(value) > MAX_HEADER_VALUE or not _HEADER_SAFE.fullmatch(value):
        raise ValueError(f"{name} must be 1..{MAX_HEADER_VALUE} visible ASCII characters")


def _failed(error: OutboundError, log: AttemptLog, http_status: int | None = None,
            result: dict[str, Any] | None = None, status: CallStatus = "failed") -> HostedCallResult:
    return HostedCallResult(status=status, result=result, http_status=http_status,
                            error=error.as_dict(), attempts=log.entries)


def _succeeded(reply: Reply, log: AttemptLog) -> HostedCallResult:
    if reply.body_error is not None:
        return _failed(reply.body_error, log, reply.status)
    document = decode_json_object(reply.body)
    if document is None:
        return _failed(OutboundError("invalid_response", "the host answered 2xx without a JSON "
                                     "object body"), log, reply.status)
    patch_ref = document.get("patch_ref")
    if patch_ref is not None and (not isinstance(patch_ref, str) or not patch_ref.strip()
                                  or len(patch_ref) > MAX_PATCH_REF_LENGTH):
        return _failed(OutboundError("invalid_response", "patch_ref must be a non-empty string "
                                     f"of at most {MAX_PATCH_REF_LENGTH} characters"),
                       log, reply.status, document)
    return HostedCallResult(status="succeeded", result=document, patch_ref=patch_ref,
                            http_status=reply.status, attempts=log.entries)


def _unsuccessful(reply: Reply, log: AttemptLog, reliability: Reliability) -> HostedCallResult:
    document = decode_json_object(reply.body) if reply.body else None
    if 300 <= reply.status < 400:
        error = OutboundError("redirect_refused", f"the host answered HTTP {reply.status}; "
                              "tool calls do not follow redirects")
    elif reply.status == 429:
        error = OutboundError("rate_limited", host_error_message(reply))
    else:
        error = OutboundError("http_error", host_error_message(reply))
    unknown = reliability == "at_most_once" and reply.status in FATE_UNKNOWN_STATUSES
    return _failed(error, log, reply.status, document, "unknown" if unknown else "failed")


async def call_hosted_tool(
    client: httpx.AsyncClient, *, base_url: str, path: str, request_secret: str,
    bearer_token: str, payload: dict[str, Any], reliability: Reliability, idempotency_key: str,
    max_attempts: int = 3, backoff: RetryPolicy = DEFAULT_RETRY,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    before_retry: Callable[[], Awaitable[Any]] | None = None,
) -> HostedCallResult:
    """POST ``payload`` as JSON to ``{base_url}{path}``, signed, with the session token.

    ``before_retry`` is awaited before every attempt after the first; an exception from it
    propagates and no further attempt is made (a run's executor that lost the run stops there).

    Programming errors (bad reliability, unserialisable payload, unsafe header values) raise
    ``ValueError``; everything about the host's behaviour is in the result.
    """
    if reliability not in ("idempotent", "at_most_once"):
        raise ValueError("reliability must be 'idempotent' or 'at_most_once'")
    if not isinstance(payload, dict):
        raise TypeError("payload must be a dict")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) \
            or not 1 <= max_attempts <= 10:
        raise ValueError("max_attempts must be an integer from 1 to 10")
    if not isinstance(request_secret, str) or not request_secret:
        raise ValueError("request_secret must be a non-empty string")
    _check_header_value("bearer_token", bearer_token)
    _check_header_value("idempotency_key", idempotency_key)
    body = encode_json(payload)
    log = AttemptLog()
    try:
        url = join_url(base_url, path)
    except ValueError as exc:
        return _failed(OutboundError("invalid_url", str(exc)), log)
    headers = {"Authorization": f"Bearer {bearer_token}", "Idempotency-Key": idempotency_key,
               "Content-Type": "application/json", "Accept": "application/json"}
    allowed = max_attempts if reliability == "idempotent" else 1
    for n in range(1, allowed + 1):
        if n > 1 and before_retry is not None:
            await before_retry()
        entry, started = log.start()
        try:
            reply = await post_signed(client, url, body=body, request_secret=request_secret,
                                      headers=headers)
        except AttemptFailed as failure:
            log.finish(entry, started, error=failure.error)
            if reliability == "at_most_once":
                return _failed(failure.error, log, status="unknown" if failure.sent else "failed")
            if not failure.retryable or n == allowed:
                return _failed(failure.error, log)
            await sleep(backoff.delay(n))
            continue
        log.finish(entry, started, http_status=reply.status, error=reply.body_error)
        if 200 <= reply.status < 300:
            return _succeeded(reply, log)
        if reliability == "idempotent" and reply.status in RETRYABLE_STATUSES and n < allowed:
            await sleep(backoff.delay(n, parse_retry_after(reply.headers.get("retry-after"))))
            continue
        return _unsuccessful(reply, log, reliability)
    raise AssertionError("unreachable: the loop always returns")  # pragma: no cover
