"""Workspace secret keys: hashing for storage and constant-time checks."""

from __future__ import annotations

import hashlib
import re

_SECRET = re.compile(r"^sk_(live|test)_[A-Za-z0-9_-]{20,100}$")


def hash_secret(secret: str) -> str:
    """SHA-256 is enough here: secrets carry 256 random bits, so there is nothing to brute-force."""
    return hashlib.sha256(secret.encode()).hexdigest()


def is_well_formed_secret(value: str) -> bool:
    return bool(_SECRET.match(value))


def secret_hint(secret: str) -> str:
    prefix = secret[:8]  # sk_live_ / sk_test_
    return f"{prefix}…{secret[-4:]}"
