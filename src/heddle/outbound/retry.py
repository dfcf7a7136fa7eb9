"""Backoff for retried outbound calls: exponential with full jitter, and `Retry-After`.

Small on purpose; no retry library is installed (tenacity would do the delays, but the
decision of *whether* a call may be retried is the caller's domain logic anyway).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
from dataclasses import dataclass

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""HTTP answers worth another try (tool calls that may be retried, mint requests, MCP sessions)."""


@dataclass(frozen=True)
class RetryPolicy:
    base_delay: float = 0.25
    max_delay: float = 4.0
    max_retry_after: float = 30.0
    """A larger `Retry-After` is capped to this; the call is not held longer."""

    def __post_init__(self) -> None:
        if self.base_delay < 0 or self.max_delay < self.base_delay or self.max_retry_after < 0:
            raise ValueError("need 0 <= base_delay <= max_delay and max_retry_after >= 0")

    def delay(self, attempt: int, retry_after: float | None = None,
              rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if attempt < 1:
            raise ValueError("attempt numbers start at 1")
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * (2 ** min(attempt - 1, 30)))
        return (rng or random).uniform(0, ceiling)


def parse_retry_after(value: str | None, now: dt.datetime | None = None) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP-date; None when absent or invalid."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > 64:
        return None
    if value.isascii() and value.isdigit():
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    now = now or dt.datetime.now(dt.UTC)
    return max((when - now).total_seconds(), 0.0)


DEFAULT_RETRY = RetryPolicy()
