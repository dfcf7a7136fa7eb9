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
    def submit(self, run_id: uuid.UUID) -> None: ...  # the in-process executor also takes `claimed`


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
    # Runs this transaction created (their row is its own until commit, their event log empty),
    # by workspace: staging their events needs neither the row lock nor the log's last seq.
    created: dict[uuid.UUID, str] = field(default_factory=dict)
    # Set by `run_events.stage()` when the transaction owes a webhook delivery: only then is
    # the dispatcher woken after the commit.
    webhooks_owed: bool = False
    # Runs created already claimed by the in-process executor (InProcessExecutor.preclaim), by
    # the fence token they were inserted with.
    claimed: dict[uuid.UUID, int] = field(default_factory=dict)

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
                if run_id in self.claimed:
                    submitter.submit(run_id, claimed=self.claimed[run_id])
                else:
                    submitter.submit(run_id)
        self.events.clear()
        self.submit.clear()
