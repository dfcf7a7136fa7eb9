"""Retries with exponential backoff and jitter, shared by the HTTP model providers.

The SDKs are built with `max_retries=0` so that this module alone decides: which failures are
worth another attempt (the caller's `classify` says), how long to wait (the server's
`Retry-After` when it sent one, capped; else exponential backoff with jitter), and how many
attempts a model class may spend. Every failed attempt is recorded for the run's trace.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from heddle.loom.providers.base import ModelAttempt, ModelClass, ModelProviderError

T = TypeVar("T")

DEFAULT_BASE_DELAY = 0.5  # seconds before the first retry (before jitter)
DEFAULT_MAX_DELAY = 8.0  # ceiling of the exponential backoff
DEFAULT_RETRY_AFTER_CAP = 20.0  # never wait longer than this for a server's Retry-After
DEFAULT_JITTER = 0.25  # up to this fraction of each backoff delay is removed at random


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = DEFAULT_BASE_DELAY
    max_delay: float = DEFAULT_MAX_DELAY
    retry_after_cap: float = DEFAULT_RETRY_AFTER_CAP
    jitter: float = DEFAULT_JITTER

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        for name in ("base_delay", "max_delay", "retry_after_cap"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    @classmethod
    def for_model_class(cls, model_class: ModelClass) -> RetryPolicy:
        """The model class's retry count, with delays from its `options` when set."""
        options = model_class.options
        return cls(
            max_retries=model_class.max_retries,
            base_delay=float(options.get("retry_base_delay", DEFAULT_BASE_DELAY)),
            max_delay=float(options.get("retry_max_delay", DEFAULT_MAX_DELAY)),
            retry_after_cap=float(options.get("retry_after_cap", DEFAULT_RETRY_AFTER_CAP)),
        )

    def backoff(self, retry_number: int, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry `retry_number` (1-based) when the server gave no hint."""
        exponent = min(max(retry_number - 1, 0), 32)  # 2**32 * any delay is past max_delay
        delay = min(self.max_delay, self.base_delay * (2**exponent))
        return delay * (1 - self.jitter * rand())

    def delay(self, retry_number: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry_after_cap)
        return self.backoff(retry_number)


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `retry-after`.

    `retry-after` may be delay-seconds or an HTTP-date (RFC 9110 section 10.2.3). Unparseable,
    negative or non-finite values are ignored (None); a date in the past means "now" (0).
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    milliseconds = _finite_non_negative(lowered.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    seconds = _finite_non_negative(raw)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def _finite_non_negative(raw: str | None) -> float | None:
    if raw is None or len(raw) > 32:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value


@dataclass(frozen=True)
class AttemptFailure:
    """How one failed attempt is understood: its message (already free of secrets) and fate.

    `code` is the short word the trace and the metrics use (see `ModelAttempt.error_code`).
    """

    message: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None
    code: str = "unusable"
    # The request never reached the server whole (its body could not be written): retried once
    # at once, on top of the policy's retries, as a browser retries a stale keep-alive connection.
    unsent: bool = False


async def call_with_retries(
    operation: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    classify: Callable[[Exception], AttemptFailure],
    label: str,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> tuple[T, list[ModelAttempt]]:
    """Run `operation` until it succeeds, a failure is not retryable, or retries run out.

    Returns the result and every attempt (the failed ones, then the one that succeeded), for
    the trace. Raises `ModelProviderError` naming `label`, the last failure and the number of
    attempts, carrying the attempts. Cancellation is never swallowed: only `Exception` is
    classified.
    """
    attempts: list[ModelAttempt] = []
    resent = 0  # unsent attempts retried at once (at most one)
    while True:
        number = len(attempts) + 1
        started = time.perf_counter()
        try:
            result = await operation()
        except Exception as exc:
            failure = classify(exc)
            attempt = ModelAttempt(number, "error", time.perf_counter() - started, error_code=failure.code,
                                   error=failure.message, status=failure.status, retry_after=failure.retry_after)
            if failure.unsent and not resent:
                resent = 1
                attempts.append(attempt)
                continue
            give_up = not failure.retryable or number - resent > policy.max_retries
            if give_up:
                attempts.append(attempt)
                suffix = f" (gave up after {number} attempts)" if failure.retryable else ""
                raise ModelProviderError(
                    f"{label}: {failure.message}{suffix}", retryable=failure.retryable, status=failure.status,
                    code=failure.code, attempts=tuple(attempts),
                ) from exc
            wait = policy.delay(number - resent, failure.retry_after)
            attempts.append(replace(attempt, waited_seconds=round(wait, 3)))
        else:
            attempts.append(ModelAttempt(number, "ok", time.perf_counter() - started))
            return result, attempts
        await sleep(wait)
