"""Public identifiers: prefixed random ids for workspaces, keys and agents; UUIDs elsewhere."""

from __future__ import annotations

import secrets
import uuid

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def _token(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def workspace_id() -> str:
    return f"ws_{_token(20)}"


def key_id() -> str:
    return f"key_{_token(20)}"


def agent_id() -> str:
    return f"agent_{_token(20)}"


def secret_key(mode: str) -> str:
    """A workspace secret: `sk_live_…` or `sk_test_…` with 256 bits of randomness."""
    return f"sk_{mode}_{secrets.token_urlsafe(32)}"


def request_secret() -> str:
    return f"rs_{secrets.token_urlsafe(32)}"


def parse_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        return None
