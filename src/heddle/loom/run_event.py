"""`RunEvent`: one event of a thread, typed, from the moment it is recorded to every reader.

A unit of work records events as a change happens (`RunWork.run_updated`, `message_created`,
`thread_deleted`); a model turn's reply streams `message.delta` pieces (heddle/loom/deltas.py).
The same object then goes everywhere the event goes: the outbox stores it in the change's
transaction (heddle/loom/event_outbox.py), the log gives it back with its `seq`
(heddle/loom/event_log.py), the SSE stream sends it (heddle/loom/sse.py), realtime publishes it
on its thread's channel, and the webhook rule reads the run's updates from it. Its run is known
from the start (never parsed back out of its payload).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from heddle.loom.channels import payload, thread_channel
from heddle.loom.feedback_schemas import Feedback as FeedbackModel
from heddle.loom.schemas import Message as MessageModel
from heddle.loom.schemas import Run as RunModel
from heddle.runs_vocabulary import MESSAGE_CREATED, MESSAGE_FEEDBACK, RUN_EVENTS, RUN_UPDATED, THREAD_DELETED


@dataclass(frozen=True, slots=True)
class RunEvent:
    name: str
    payload: dict[str, Any]
    thread_id: uuid.UUID | str | None  # None: read back from the log, which does not keep it
    run_id: uuid.UUID | None  # None: not a run's event (a thread erased), so never stored
    seq: int | None = None  # its place in the run's stored log, once known

    @property
    def channel(self) -> str:
        """The realtime channel of its thread."""
        return thread_channel(self.thread_id)

    def at(self, seq: int) -> RunEvent:
        """The same event at `seq` of its run's log."""
        return replace(self, seq=seq)


def _uuid(value: Any) -> uuid.UUID | None:
    if value is None or isinstance(value, uuid.UUID):
        return value
    return uuid.UUID(str(value))


def run_updated(thread_id: uuid.UUID, run: dict[str, Any] | BaseModel) -> RunEvent:
    data = payload(RunModel, run)
    return RunEvent(RUN_UPDATED, data, thread_id, _uuid(data["id"]))


def message_created(thread_id: uuid.UUID, message: dict[str, Any] | BaseModel) -> RunEvent:
    data = payload(MessageModel, message)
    return RunEvent(MESSAGE_CREATED, data, thread_id, _uuid(data.get("run_id")))


def message_feedback(thread_id: uuid.UUID, feedback: dict[str, Any]) -> RunEvent:
    """A subject rated (or withdrew its rating of) an answer of the run: stored in its log."""
    data = payload(FeedbackModel, feedback)
    return RunEvent(MESSAGE_FEEDBACK, data, thread_id, _uuid(data.get("run_id")))


def thread_deleted(thread_id: uuid.UUID, why: str) -> RunEvent:
    return RunEvent(THREAD_DELETED, {"thread_id": str(thread_id), "reason": why}, thread_id, None)


def run_id_of(name: str, data: dict[str, Any]) -> uuid.UUID | None:
    """The run of an event that arrives untyped from the shared bus (another process's), or None
    when it is not a run's event: a Run's own `id`, a message's (or delta's) `run_id`."""
    if name not in RUN_EVENTS:
        return None
    raw = data.get("id") if name == RUN_UPDATED else data.get("run_id")
    try:
        return _uuid(raw) if raw else None
    except ValueError:
        return None


def sent_by_database(name: str, data: dict[str, Any]) -> bool:
    """True for an event the outbox or the delta writer stores (a run's event), which PostgreSQL's
    event bus then sends from the storing transaction (migration 0010): the publisher skips it."""
    return run_id_of(name, data) is not None
