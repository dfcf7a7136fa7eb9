"""What the SDK-backed providers share: one client, the error classifier and the retry loop.

A subclass says how to build its wire request, send it with its SDK and parse the reply; the
turn itself (retries, recording failed attempts, turning the reply into a `ModelResponse`) is
the same for every provider.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, ClassVar

from heddle.loom.providers.base import ChatMessage, ModelClass, ModelResponse, StreamSink, ToolSpec
from heddle.loom.providers.retry import AttemptFailure, RetryPolicy, call_with_retries
from heddle.loom.providers.sdk_errors import SdkErrorTypes, make_classifier, response_body
from heddle.loom.providers.streaming import StreamInterrupted, is_transport_error


class SdkProvider:
    """One SDK client for one model class's endpoint; `complete` may be called concurrently."""

    label: ClassVar[str]
    errors: ClassVar[SdkErrorTypes]

    def __init__(self, model_class: ModelClass, client: Any):
        self._client = client
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
        payload = self._request(model_class, messages, tools)
        label = f"{self.label} ({model_class.name})"
        policy = RetryPolicy.for_model_class(model_class)
        if stream is not None and model_class.options.get("stream", True):
            body, failures = await call_with_retries(
                self._streamed_attempts(payload, stream), policy=policy, classify=self._classify_streamed,
                label=label)
            body["heddle_streamed"] = True
        else:
            reply, failures = await call_with_retries(
                lambda: self._send(payload), policy=policy, classify=self._classify, label=label)
            body = response_body(reply, label)
        if failures:
            body["heddle_retries"] = failures
        return self._parse(body, payload, model_class.name, messages, tools)

    def _streamed_attempts(self, payload: dict[str, Any], sink: StreamSink):
        """One streamed attempt per call; from the second on, the sink is told to start over."""
        attempts = 0

        async def attempt() -> dict[str, Any]:
            nonlocal attempts
            attempts += 1
            if attempts > 1:
                sink.restart()
            try:
                return await self._stream(payload, sink)
            except Exception as exc:
                if is_transport_error(exc):  # broke mid-stream: the SDKs raise these unwrapped
                    raise StreamInterrupted(str(exc) or type(exc).__name__) from exc
                raise

        return attempt

    def _classify_streamed(self, exc: Exception) -> AttemptFailure:
        if isinstance(exc, StreamInterrupted):
            return AttemptFailure(f"the stream broke off: {str(exc)[:200]}", retryable=True)
        if isinstance(exc, ValueError | KeyError | TypeError | RuntimeError) and not isinstance(exc, self.errors.base):
            # The SDK's accumulator refused what the server streamed (bad event order, bad JSON).
            return AttemptFailure(f"unusable stream: {str(exc)[:200]}", retryable=False)
        return self._classify(exc)
