"""Relay mode: getting a subject token from the workspace's ``mint_url``.

Heddle POSTs ``{"subject": "<channel>:<id>"}`` signed with `Service-Signature`; the caller
answers ``{"token", "expires_in"}``, bare or inside the ``{"status": "success", "data": …}``
envelope. Minting has no side effect, so network errors, 408, 429 and 5xx are retried.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from heddle.outbound.exchange import (
    AttemptFailed,
    Reply,
    decode_json_object,
    encode_json,
    host_error_message,
    post_signed,
)
from heddle.outbound.retry import DEFAULT_RETRY, RETRYABLE_STATUSES, RetryPolicy, parse_retry_after

MAX_EXPIRES_IN = 3600
MAX_TOKEN_LENGTH = 16 * 1024
MAX_SUBJECT_LENGTH = 300
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750 b64token


class MintError(Exception):
    """``code`` is ``mint_not_configured``, ``mint_failed`` or ``mint_invalid_response``."""

    def __init__(self, code: str, message: str, *, http_status: int | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.http_status = http_status


@dataclass(frozen=True)
class MintedToken:
    token: str
    expires_at: float
    """Unix seconds, computed from ``expires_in`` when the answer arrived."""
    expires_in: int

    def __repr__(self) -> str:  # never print the token
        return f"MintedToken(token=<{len(self.token)} chars>, expires_in={self.expires_in})"


def parse_mint_response(reply: Reply, now: float) -> MintedToken:
    if reply.body_error is not None:
        raise MintError("mint_invalid_response", reply.body_error.message, http_status=reply.status)
    document = decode_json_object(reply.body)
    if document is None:
        raise MintError("mint_invalid_response", "the mint answer is not a JSON object",
                        http_status=reply.status)
    if "data" in document:
        if document.get("status", "success") != "success" or not isinstance(document["data"], dict):
            raise MintError("mint_invalid_response", "the mint envelope must be "
                            '{"status": "success", "data": {...}}', http_status=reply.status)
        document = document["data"]
    token, expires_in = document.get("token"), document.get("expires_in")
    if not isinstance(token, str) or not token:
        raise MintError("mint_invalid_response", "the mint answer has no token string",
                        http_status=reply.status)
    if len(token) > MAX_TOKEN_LENGTH or not _BEARER_TOKEN.fullmatch(token):
        raise MintError("mint_invalid_response", "the minted token is too long or is not usable "
                        "as a bearer token", http_status=reply.status)
    if isinstance(expires_in, bool) or not isinstance(expires_in, int) \
            or not 0 < expires_in <= MAX_EXPIRES_IN:
        raise MintError("mint_invalid_response", "expires_in must be an integer number of "
                        f"seconds from 1 to {MAX_EXPIRES_IN}", http_status=reply.status)
    return MintedToken(token=token, expires_at=now + expires_in, expires_in=expires_in)


async def mint_subject_token(
    client: httpx.AsyncClient, *, mint_url: str | None, request_secret: str, subject: str,
    max_attempts: int = 2, backoff: RetryPolicy = DEFAULT_RETRY,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> MintedToken:
    """Ask the caller's mint endpoint for a token for ``subject``; raises ``MintError``."""
    if not mint_url:
        raise MintError("mint_not_configured", "the workspace has no mint_url; set one to let "
                        "relay runs call hosted tools")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > MAX_SUBJECT_LENGTH:
        raise ValueError(f"subject must be a non-empty string of at most {MAX_SUBJECT_LENGTH} "
                         "characters")
    if not isinstance(request_secret, str) or not request_secret:
        raise ValueError("request_secret must be a non-empty string")
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    body = encode_json({"subject": subject})
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    for n in range(1, max_attempts + 1):
        try:
            reply = await post_signed(client, mint_url, body=body, request_secret=request_secret,
                                      headers=headers)
        except AttemptFailed as failure:
            if not failure.retryable or n == max_attempts:
                raise MintError("mint_failed", failure.error.message) from None
            await sleep(backoff.delay(n))
            continue
        if 200 <= reply.status < 300:
            return parse_mint_response(reply, clock())
        if reply.status in RETRYABLE_STATUSES and n < max_attempts:
            await sleep(backoff.delay(n, parse_retry_after(reply.headers.get("retry-after"))))
            continue
        raise MintError("mint_failed", host_error_message(reply), http_status=reply.status)
    raise AssertionError("unreachable: the loop always returns")  # pragma: no cover
