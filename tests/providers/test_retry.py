"""The shared backoff helper: delays, Retry-After parsing and the retry loop."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from heddle.loom.providers.base import ModelClass, ModelProviderError
from heddle.loom.providers.retry import (
    AttemptFailure,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
)


class Flaky:
    """An operation that fails with the given exceptions, then returns 'done'."""

    def __init__(self, *errors: Exception):
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


class Transient(Exception):
    pass


class Fatal(Exception):
    pass


def classify(exc: Exception) -> AttemptFailure:
    if isinstance(exc, Transient):
        return AttemptFailure(str(exc), retryable=True, status=503, retry_after=None, code="server_error")
    if isinstance(exc, Fatal):
        return AttemptFailure(str(exc), retryable=False, status=400)
    raise exc


class Unsent(Exception):
    pass


def classify_unsent(exc: Exception) -> AttemptFailure:
    if isinstance(exc, Unsent):
        return AttemptFailure("connection failed: body", retryable=True, code="connection", unsent=True)
    return classify(exc)


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_backoff_grows_exponentially_with_bounded_jitter():
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, jitter=0.25)
    assert [policy.backoff(n, rand=lambda: 0.0) for n in (1, 2, 3, 4, 5, 60)] == [1, 2, 4, 8, 8, 8]
    assert policy.backoff(2, rand=lambda: 1.0) == pytest.approx(1.5)
    for _ in range(200):
        assert 0.75 <= policy.backoff(1) <= 1.0


def test_retry_after_wins_over_backoff_but_is_capped():
    policy = RetryPolicy(base_delay=1.0, retry_after_cap=5.0)
    assert policy.delay(1, retry_after=0.25) == 0.25
    assert policy.delay(1, retry_after=3600) == 5.0


@pytest.mark.parametrize("kwargs", [
    {"max_retries": -1}, {"base_delay": -1}, {"max_delay": float("inf")}, {"retry_after_cap": float("nan")},
    {"jitter": 1.5},
])
def test_policy_refuses_nonsense(kwargs):
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


def test_policy_from_model_class_options():
    model_class = ModelClass(name="x", provider="openai", max_retries=5,
                             options={"retry_base_delay": 0.1, "retry_after_cap": 2})
    policy = RetryPolicy.for_model_class(model_class)
    assert (policy.max_retries, policy.base_delay, policy.retry_after_cap) == (5, 0.1, 2.0)


NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("headers, expected", [
    ({}, None),
    ({"Retry-After": "7"}, 7.0),
    ({"retry-after": "1.5"}, 1.5),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
    ({"retry-after-ms": "junk", "retry-after": "9"}, 9.0),
    ({"retry-after": format_datetime(NOW + timedelta(seconds=30), usegmt=True)}, 30.0),
    ({"retry-after": format_datetime(NOW - timedelta(seconds=30), usegmt=True)}, 0.0),
    ({"retry-after": "-5"}, None),
    ({"retry-after": "inf"}, None),
    ({"retry-after": "nan"}, None),
    ({"retry-after": "soon"}, None),
    ({"retry-after": "9" * 400}, None),
])
def test_parse_retry_after(headers, expected):
    assert parse_retry_after(headers, now=NOW) == expected


async def test_success_after_transient_failures_records_them():
    sleeps = Sleeps()
    operation = Flaky(Transient("busy"), Transient("still busy"))
    result, attempts = await call_with_retries(
        operation, policy=RetryPolicy(max_retries=3, base_delay=0.5, jitter=0), classify=classify,
        label="test", sleep=sleeps,
    )
    assert result == "done" and operation.calls == 3
    assert sleeps.waits == [0.5, 1.0]
    records = [attempt.as_dict() for attempt in attempts]
    for record in records:  # measured, so only its presence is fixed
        assert record.pop("duration_ms") >= 0
    assert records == [
        {"attempt": 1, "outcome": "error", "error_code": "server_error", "error": "busy", "status": 503,
         "waited_seconds": 0.5},
        {"attempt": 2, "outcome": "error", "error_code": "server_error", "error": "still busy", "status": 503,
         "waited_seconds": 1.0},
        {"attempt": 3, "outcome": "ok"},
    ]


async def test_gives_up_after_max_retries():
    sleeps = Sleeps()
    operation = Flaky(*[Transient("busy")] * 5)
    with pytest.raises(ModelProviderError) as failure:
        await call_with_retries(operation, policy=RetryPolicy(max_retries=2), classify=classify,
                                label="openai (x)", sleep=sleeps)
    assert operation.calls == 3 and len(sleeps.waits) == 2
    assert str(failure.value) == "openai (x): busy (gave up after 3 attempts)"
    assert failure.value.retryable and failure.value.status == 503 and failure.value.code == "server_error"
    assert [a.number for a in failure.value.attempts] == [1, 2, 3]  # every attempt, for the trace
    assert [a.waited_seconds is None for a in failure.value.attempts] == [False, False, True]
    assert isinstance(failure.value.__cause__, Transient)


async def test_non_retryable_fails_at_once():
    operation = Flaky(Fatal("bad request"))
    with pytest.raises(ModelProviderError, match="^x: bad request$") as failure:
        await call_with_retries(operation, policy=RetryPolicy(max_retries=5), classify=classify,
                                label="x", sleep=Sleeps())
    assert operation.calls == 1 and failure.value.status == 400 and not failure.value.retryable


async def test_unknown_errors_propagate_unchanged():
    operation = Flaky(KeyError("bug"))
    with pytest.raises(KeyError):
        await call_with_retries(operation, policy=RetryPolicy(), classify=classify, label="x", sleep=Sleeps())
    assert operation.calls == 1


async def test_cancellation_is_not_swallowed():
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.sleep(60)

    task = asyncio.create_task(call_with_retries(hang, policy=RetryPolicy(), classify=classify, label="x"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_request_never_sent_is_resent_at_once_on_top_of_the_policy():
    """A pooled connection the server closed as it was taken: one retry without waiting, even
    with retries off, recorded in the trace; a second such failure counts as any other."""
    sleeps = Sleeps()
    result, attempts = await call_with_retries(Flaky(Unsent()), policy=RetryPolicy(max_retries=0),
                                               classify=classify_unsent, label="x", sleep=sleeps)
    assert result == "done" and sleeps.waits == []
    assert [(a.number, a.outcome, a.error_code, a.waited_seconds) for a in attempts] == [
        (1, "error", "connection", None), (2, "ok", None, None)]

    with pytest.raises(ModelProviderError, match="gave up after 2 attempts"):
        await call_with_retries(Flaky(Unsent(), Unsent()), policy=RetryPolicy(max_retries=0),
                                classify=classify_unsent, label="x", sleep=sleeps)
    operation = Flaky(Unsent(), Transient("busy"), Unsent())
    result, attempts = await call_with_retries(operation, policy=RetryPolicy(max_retries=2, base_delay=0.5, jitter=0),
                                               classify=classify_unsent, label="x", sleep=sleeps)
    assert operation.calls == 4 and sleeps.waits == [0.5, 1.0]  # the backoff starts at the first counted retry


def test_the_sdk_error_for_an_unwritten_body_is_unsent():
    """The OpenAI SDK's aiohttp transport raises a connect timeout from aiohttp's ClientOSError;
    only the body-write failure means the server never had the request."""
    import openai
    from aiohttp import ClientOSError, ServerDisconnectedError

    from heddle.loom.providers.openai_compat import OPENAI_ERRORS
    from heddle.loom.providers.sdk_errors import make_classifier

    def sdk_error(cause: BaseException) -> Exception:
        try:
            try:
                raise cause
            except Exception as exc:
                raise openai.APITimeoutError(request=None) from exc
        except openai.APITimeoutError as exc:
            return exc

    classify_sdk = make_classifier(OPENAI_ERRORS, secrets=[], timeout=60)
    unwritten = classify_sdk(sdk_error(ClientOSError(None, "Can not write request body for http://m/v1")))
    assert unwritten.unsent and unwritten.retryable and unwritten.message.startswith("connection failed")
    reset = classify_sdk(sdk_error(ClientOSError(104, "Connection reset by peer")))
    assert reset.retryable and not reset.unsent
    assert not classify_sdk(sdk_error(ServerDisconnectedError())).unsent  # it may have had the request
