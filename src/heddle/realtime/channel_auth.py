"""Pusher's private-channel authorization scheme, and the shapes Heddle accepts.

`auth = "<key>:" + hex(HMAC-SHA256(secret, "<socket_id>:<channel_name>"))`, the same string the
official `pusher` library's `authenticate()` returns (a test checks they are equal).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid

_SOCKET_ID = re.compile(r"^\d{1,20}\.\d{1,20}$")
_THREAD_CHANNEL = re.compile(
    r"^private-thread-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


def channel_auth(key: str, secret: str, socket_id: str, channel_name: str) -> str:
    digest = hmac.new(secret.encode(), f"{socket_id}:{channel_name}".encode(), hashlib.sha256).hexdigest()
    return f"{key}:{digest}"


def verify_channel_auth(key: str, secret: str, socket_id: str, channel_name: str, presented: str) -> bool:
    return hmac.compare_digest(channel_auth(key, secret, socket_id, channel_name).encode(),
                               presented.encode("utf-8", "replace"))


def is_valid_socket_id(value: str) -> bool:
    return bool(_SOCKET_ID.match(value))


def parse_thread_channel(name: str) -> uuid.UUID | None:
    """The thread of `private-thread-<canonical lowercase uuid>`, or None for anything else."""
    match = _THREAD_CHANNEL.match(name)
    return uuid.UUID(match.group(1)) if match else None
