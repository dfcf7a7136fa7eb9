"""What the SDK-backed providers share: one client, the error classifier and the retry loop.

A subclass says how to build its wire request, send it with its SDK and parse the reply; the
turn itself (retries, recording failed attempts, turning the reply into a `ModelResponse`) is
the same for every provider.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, ClassVar

from heddle.loom.providers.base import ChatMessage, ModelClass, ModelResponse, ToolSpec
from heddle.loom.providers.retry import RetryPolicy, call_with_retries
from heddle.loom.providers.sdk_errors import SdkErrorTypes, make_classifier, response_body


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

    def _parse(self, body: dict[str, Any], payload: dict[str, Any], class_name: str,
               messages: list[ChatMessage], tools: list[ToolSpec]) -> ModelResponse:
        raise NotImplementedError

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, model_class: ModelClass, messages: list[ChatMessage],
                       tools: list[ToolSpec]) -> ModelResponse:
        payload = self._request(model_class, messages, tools)
        label = f"{self.label} ({model_class.name})"
        reply, failures = await call_with_retries(
            lambda: self._send(payload), policy=RetryPolicy.for_model_class(model_class),
            classify=self._classify, label=label)
        body = response_body(reply, label)
        if failures:
            body["heddle_retries"] = failures
        return self._parse(body, payload, model_class.name, messages, tools)
