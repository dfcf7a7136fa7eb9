"""What a committed change must cause next: events to publish and runs to (re)start.

Service code collects `Effects` inside a transaction; callers apply them only after the
commit, so no event ever describes a change that was rolled back.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from heddle.loom.schemas import Message, Run


class EventSink(Protocol):
    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None: ...


class RunSubmitter(Protocol):
    def submit(self, run_id: uuid.UUID) -> None: ...


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


@dataclass
class Effects:
    events: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    submit: list[uuid.UUID] = field(default_factory=list)

    def message_created(self, thread_id: uuid.UUID, message: dict[str, Any] | Message) -> None:
        self.events.append((thread_channel(thread_id), "message.created", payload(Message, message)))

    def run_updated(self, thread_id: uuid.UUID, run: dict[str, Any] | Run) -> None:
        self.events.append((thread_channel(thread_id), "run.updated", payload(Run, run)))

    def start(self, run_id: uuid.UUID) -> None:
        self.submit.append(run_id)

    async def apply(self, sink: EventSink | None, submitter: RunSubmitter | None,
                    realtime_enabled: bool = True) -> None:
        if sink is not None and realtime_enabled:
            for channel, name, data in self.events:
                await sink.publish(channel, name, data)
        if submitter is not None:
            for run_id in self.submit:
                submitter.submit(run_id)
        self.events.clear()
        self.submit.clear()
