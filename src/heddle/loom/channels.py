"""Where a thread's realtime events go: its channel name, the sink's interface, the payload check."""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from pydantic import BaseModel


class EventSink(Protocol):
    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None: ...


def thread_channel(thread_id: uuid.UUID | str) -> str:
    return f"private-thread-{thread_id}"


def payload(model: type[BaseModel], data: dict[str, Any] | BaseModel) -> dict[str, Any]:
    """An event payload, checked against the read model the HTTP API uses for the same object.

    A dict is validated and sent as it is (the check is the point; dumping it again would only
    cost time); a model instance is dumped to JSON-ready data.
    """
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    model.model_validate(data)
    return data
