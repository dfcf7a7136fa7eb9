"""Verify the run webhooks Heddle POSTs to your backend (a sibling of `heddle.toolhost`).

A webhook is signed exactly like a tool call, under the workspace's **webhook secret** (shown
by `heddle workspace update WS --webhook-url URL`) instead of the request secret:

    Service-Signature: t=<unix_seconds>,v1=<hex HMAC-SHA256(webhook_secret, "<t>.POST.<path>.<body_digest>")>

where ``path`` is the request target as received (path plus ``?query``) and ``body_digest``
is base64(SHA-256(raw body)). The body is ``{"id", "type", "created_at", "data"}``: ``type``
is ``run.closed``, ``run.failed``, ``run.awaiting_input`` or ``run.awaiting_outcome`` and
``data`` is the Run. Delivery is at least once: a retry carries the same ``id`` (also in the
``Service-Event-Id`` header), so remember the ids you have handled and skip repeats. Answer
any 2xx once the event is stored; anything else (or no answer within 15 s) is retried with
backoff for at least 24 hours.

Standard library and `heddle.toolhost` only, so it can be copied next to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from heddle.toolhost import DEFAULT_TOLERANCE, ReplayCache, Secrets, VerificationError, verify_request

EVENT_TYPES = ("run.closed", "run.failed", "run.awaiting_input", "run.awaiting_outcome")


class WebhookPayloadError(VerificationError):
    """The signature is good but the body is not a webhook event."""

    status = 400


def verify_webhook(*, body: bytes, headers: Mapping[str, str], path: str, webhook_secret: Secrets,
                   method: str = "POST", now: float | None = None, tolerance: int = DEFAULT_TOLERANCE,
                   replay_cache: ReplayCache | None = None) -> dict[str, Any]:
    """Check the signature over the raw ``body`` and return the event; raises
    ``SignatureError`` (refuse with 401) or ``WebhookPayloadError`` (400).

    ``webhook_secret`` may be a list while you rotate it (any one may match).
    """
    verify_request(method=method, path=path, body=body, headers=headers, request_secret=webhook_secret,
                   now=now, tolerance=tolerance, replay_cache=replay_cache)
    try:
        event = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WebhookPayloadError("webhook_malformed", "The body is not JSON.") from None
    if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not isinstance(event.get("data"), dict):
        raise WebhookPayloadError("webhook_malformed", "The body is not a webhook event {id, type, created_at, data}.")
    if event.get("type") not in EVENT_TYPES:
        raise WebhookPayloadError("webhook_malformed", f"Unknown event type {str(event.get('type'))[:40]!r}.")
    return event
