"""`Service-Signature` for the calls Heddle makes to the caller's backend.

The scheme (documented in `heddle.toolhost`, which callers use to verify it):

    Service-Signature: t=<unix_seconds>,v1=<hex HMAC-SHA256(request_secret, signed string)>
    signed string = "<t>.<METHOD>.<path>.<body_digest>"

* ``body_digest`` is base64(SHA-256(raw body)), and the empty string for an empty body.
* ``path`` is the request target as sent: the percent-encoded path plus ``?query`` if any
  (``httpx.Request.url.raw_path``), so what is signed is exactly what goes on the wire.

The primitives live in `heddle.toolhost` so that signer and verifier cannot drift apart.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable

from heddle.toolhost import (
    SIGNATURE_HEADER,
    SignatureError,
    body_digest,
    compute_signature,
    parse_signature_header,
    signed_payload,
)

__all__ = [
    "SIGNATURE_HEADER",
    "UNIQUE_TIMESTAMPS",
    "SignatureError",
    "UniqueTimestamps",
    "body_digest",
    "parse_signature_header",
    "sign",
    "signed_payload",
]


def sign(secret: str, method: str, path: str, body: bytes, t: int | None = None) -> str:
    """The `Service-Signature` header value for one request."""
    if not isinstance(body, bytes | bytearray):
        raise TypeError("body must be the raw request bytes")
    if not path.startswith("/") or any(ch in path for ch in " \r\n#"):
        raise ValueError("path must be the request target: '/...' with no space or fragment")
    if t is None:
        t = int(time.time())
    if isinstance(t, bool) or not isinstance(t, int) or t < 0:
        raise ValueError("t must be a non-negative integer of unix seconds")
    return f"t={t},v1={compute_signature(secret, t, method, path, bytes(body))}"


class UniqueTimestamps:
    """Signature timestamps such that identical requests never share one.

    Two requests with the same method, target and body signed in the same second would carry
    the same signature, and a caller that refuses replays (``heddle.toolhost.ReplayCache``)
    would reject the second: a quick retry, or a second mint for the same subject. Each
    repeat therefore gets a later ``t`` (at most a few seconds ahead; the tolerance is 300 s).
    Process-wide and thread-safe; entries are forgotten once they are in the past.
    """

    def __init__(self, clock: Callable[[], float] = time.time, max_entries: int = 100_000):
        self._clock = clock
        self._max_entries = max_entries
        self._last: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def next(self, method: str, path: str, body: bytes) -> int:
        key = hashlib.sha256(b"\0".join([method.upper().encode(), path.encode(), body])).digest()
        now = int(self._clock())
        with self._lock:
            if len(self._last) >= self._max_entries:
                self._last = {k: t for k, t in self._last.items() if t >= now}
            last = self._last.get(key)
            t = now if last is None or last < now else last + 1
            self._last[key] = t
            return t


UNIQUE_TIMESTAMPS = UniqueTimestamps()
