"""Pusher's private-channel authorization scheme, and the names Heddle accepts.

A browser asks Heddle to authorize `(socket_id, channel_name)`; the answer is
`"<key>:" + hex(HMAC-SHA256(secret, "<socket_id>:<channel_name>"))`, byte for byte what the
official `pusher` library's `authenticate()` returns, so the same string works against the
built-in server and against hosted Pusher.

Inputs are validated before signing: a socket id or channel name containing `:` could make two
different pairs sign the same string.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid

THREAD_CHANNEL_PREFIX = "private-thread-"
MAX_CHANNEL_NAME_LENGTH = 164  # Pusher's limit

# `[0-9]`, not `\d` (which matches every Unicode digit); fullmatch, so no trailing newline slips in.
_SOCKET_ID = re.compile(r"[0-9]{1,20}\.[0-9]{1,20}")
_CHANNEL_NAME = re.compile(r"[A-Za-z0-9_\-=@,.;]{1,%d}" % MAX_CHANNEL_NAME_LENGTH)
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_valid_socket_id(value: object) -> bool:
    """Pusher's socket id form, `<digits>.<digits>`, at most 20 digits on each side."""
    return isinstance(value, str) and _SOCKET_ID.fullmatch(value) is not None


def is_valid_channel_name(value: object) -> bool:
    """A name Pusher would accept: 1-164 characters of `A-Z a-z 0-9 _ - = @ , . ;`."""
    return isinstance(value, str) and _CHANNEL_NAME.fullmatch(value) is not None


def parse_thread_channel(name: object) -> uuid.UUID | None:
    """The thread of `private-thread-<canonical lowercase uuid>`; None for any other name."""
    if not isinstance(name, str) or not name.startswith(THREAD_CHANNEL_PREFIX):
        return None
    candidate = name[len(THREAD_CHANNEL_PREFIX):]
    if _CANONICAL_UUID.fullmatch(candidate) is None:
        return None
    return uuid.UUID(candidate)


def thread_channel(thread_id: uuid.UUID) -> str:
    return f"{THREAD_CHANNEL_PREFIX}{thread_id}"


def channel_auth(key: str, secret: str, socket_id: str, channel_name: str) -> str:
    """The `auth` string for a private channel subscription: `"<key>:<hex hmac-sha256>"`.

    Raises ValueError for a malformed socket id or channel name.
    """
    if not key or not secret:
        raise ValueError("key and secret must not be empty")
    if not is_valid_socket_id(socket_id):
        raise ValueError("socket_id must look like 123.456")
    if not is_valid_channel_name(channel_name):
        raise ValueError("channel_name is not a valid channel name")
    digest = hmac.new(secret.encode(), f"{socket_id}:{channel_name}".encode(), hashlib.sha256).hexdigest()
    return f"{key}:{digest}"


def verify_channel_auth(key: str, secret: str, socket_id: str, channel_name: str, presented: object) -> bool:
    """Whether `presented` is the auth string for this socket and channel (constant-time compare)."""
    if not isinstance(presented, str):
        return False
    try:
        expected = channel_auth(key, secret, socket_id, channel_name)
    except ValueError:
        return False
    return hmac.compare_digest(expected.encode(), presented.encode("utf-8", "surrogatepass"))
