"""What the SDK-backed providers share: one client, the error classifier and the retry loop.

A subclass says how to build its wire request, send it with its SDK and parse the reply; the
turn itself is the same for every provider: retries, every attempt on the record (on the
`ModelResponse` and on the `ModelProviderError`), a stream that ends without its terminal event
retried (never an answer), the `chat {model}` span with the GenAI attributes, and the model-call
metrics by model class (calls, tokens, time to first token, retries).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any, ClassVar

from heddle.loom.providers.base import (
    ChatMessage,
    ModelAttempt,
    ModelClass,
    ModelProviderError,
    ModelResponse,
    StreamSink,
    ToolSpec,
)
from heddle.loom.providers.retry import AttemptFailure, RetryPolicy, call_with_retries
from heddle.loom.providers.sdk_errors import SdkErrorTypes, make_classifier, response_body
from heddle.loom.providers.streaming import StreamIncomplete, StreamInterrupted, is_transport_error
from heddle.observability import tracing
from heddle.observability.metrics import Metrics


class SdkProvider:
    """One SDK client for one model class's endpoint; `complete` may be called concurrently."""

    label: ClassVar[str]
    errors: ClassVar[SdkErrorTypes]

    def __init__(self, model_class: ModelClass, client: Any, metrics: Metrics | None = None):
        self._client = client
        self._metrics = metrics
        self._classify = make_classifier(self.errors, secrets=(model_class.api_key,), timeout=model_class.timeout)

    def _request(self, model_class: ModelClass, messages: list[ChatMessage],
                 tools: list[ToolSpec]) -> dict[str, Any]:
        """The wire body for this turn; it is also what the trace stores as `request`."""
        raise NotImplementedError

    def _send(self, payload: dict[str, Any]) -> Awaitable[Any]:
        raise NotImplementedError

    async def _stream(self, payload: dict[str, Any], sink: StreamSink) -> dict[str, Any]:
        """Send the turn with streaming on, pieces to `sink`; returns the accumulated body."""
        raise NotImplementedError

    def _parse(self, body: dict[str, Any], payload: dict[str, Any], class_name: str,
               messages: list[ChatMessage], tools: list[ToolSpec]) -> ModelResponse:
        raise NotImplementedError

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, model_class: ModelClass, messages: list[ChatMessage],
                       tools: list[ToolSpec], stream: StreamSink | None = None) -> ModelResponse:
        started = time.perf_counter()
        with tracing.model_call_span(self.label, model_class.model, model_class=model_class.name) as span:
            try:
                response = await self._complete(model_class, messages, tools, stream)
            except ModelProviderError as exc:
                span.fail(exc.code or "model_error")
                self._observe(model_class.name, "error", started, exc.attempts)
                raise
            tracing.record_model_response(
                span, response_model=response.response.get("model"), input_tokens=response.input_tokens,
                output_tokens=response.output_tokens, finish_reason=response.stop_reason,
                attempts=len(response.attempts))
        self._observe(model_class.name, "truncated" if response.truncated else "ok", started, response.attempts,
                      response)
        return response

    async def _complete(self, model_class: ModelClass, messages: list[ChatMessage], tools: list[ToolSpec],
                        stream: StreamSink | None) -> ModelResponse:
        payload = self._request(model_class, messages, tools)
        label = f"{self.label} ({model_class.name})"
        policy = RetryPolicy.for_model_class(model_class)
        if stream is not None and model_class.options.get("stream", True):
            timed = _FirstPiece(stream)
            body, attempts = await call_with_retries(
                self._streamed_attempts(payload, timed), policy=policy, classify=self._classify_streamed,
                label=label)
            body["heddle_streamed"] = True
            if timed.seconds is not None and self._metrics is not None:
                self._metrics.model_ttft.labels(model_class.name).observe(timed.seconds)
        else:
            reply, attempts = await call_with_retries(
                lambda: self._send(payload), policy=policy, classify=self._classify, label=label)
            body = None
        failed = [attempt.as_dict() for attempt in attempts if attempt.outcome == "error"]
        try:
            body = response_body(reply, label) if body is None else body
            if failed:  # the trace of the turn keeps them even before the engine stores `attempts`
                body["heddle_retries"] = failed
            parsed = self._parse(body, payload, model_class.name, messages, tools)
        except ModelProviderError as exc:  # the exchange worked; its reply could not be used
            raise ModelProviderError(str(exc), code=exc.code or "unusable", attempts=tuple(attempts)) from exc
        return replace(parsed, attempts=tuple(attempts))

    def _observe(self, class_name: str, outcome: str, started: float, attempts: tuple[ModelAttempt, ...],
                 response: ModelResponse | None = None) -> None:
        if self._metrics is None:
            return
        m = self._metrics
        m.model_calls.labels(class_name, outcome).inc()
        m.model_call_duration.labels(class_name).observe(time.perf_counter() - started)
        for attempt in attempts:
            if attempt.waited_seconds is not None:  # it was followed by another attempt
                m.model_retries.labels(class_name, attempt.error_code or "unusable").inc()
        if response is not None:
            m.model_tokens.labels(class_name, "input").inc(response.input_tokens)
            m.model_tokens.labels(class_name, "output").inc(response.output_tokens)

    def _streamed_attempts(self, payload: dict[str, Any], sink: _FirstPiece):
        """One streamed attempt per call; from the second on, the sink is told to start over."""
        attempts = 0

        async def attempt() -> dict[str, Any]:
            nonlocal attempts
            attempts += 1
            if attempts > 1:
                await sink.restart()
            else:
                sink.start()
            try:
                return await self._stream(payload, sink)
            except Exception as exc:
                if is_transport_error(exc):  # broke mid-stream: the SDKs raise these unwrapped
                    raise StreamInterrupted(str(exc) or type(exc).__name__) from exc
                raise

        return attempt

    def _classify_streamed(self, exc: Exception) -> AttemptFailure:
        if isinstance(exc, StreamInterrupted):
            return AttemptFailure(f"the stream broke off: {str(exc)[:200]}", retryable=True, code="stream_broken")
        if isinstance(exc, StreamIncomplete):
            return AttemptFailure(f"incomplete reply: {exc}", retryable=True, code="stream_incomplete")
        if isinstance(exc, ValueError | KeyError | TypeError | RuntimeError) and not isinstance(exc, self.errors.base):
            # The SDK's accumulator refused what the server streamed (bad event order, bad JSON).
            return AttemptFailure(f"unusable stream: {str(exc)[:200]}", retryable=False, code="unusable")
        return self._classify(exc)


class _FirstPiece:
    """A `StreamSink` in front of the engine's that times each attempt's first text piece."""

    def __init__(self, sink: StreamSink):
        self._sink = sink
        self._attempt_started = time.perf_counter()
        self.seconds: float | None = None  # for the last attempt, the one that answered

    def start(self) -> None:
        self._attempt_started = time.perf_counter()

    async def restart(self) -> None:
        self.seconds = None
        await self._sink.restart()
        self._attempt_started = time.perf_counter()

    async def delta(self, text: str) -> None:
        if self.seconds is None:
            self.seconds = time.perf_counter() - self._attempt_started
        await self._sink.delta(text)
