"""A Heddle run's events as AG-UI events (ag-ui-protocol's types and `EventEncoder`, never
hand-written JSON).

The stream reads the run's stored event log exactly as `GET /v1/loom/runs/{id}/events` does
(`AgUiRunStream` is loom/sse.py's `RunEventStream`, woken by the same signals, bus and polls,
in the embedded and the PostgreSQL layout alike); `Translator` turns each batch into AG-UI:

| Heddle                                        | AG-UI                                                     |
|-----------------------------------------------|-----------------------------------------------------------|
| the request accepted                          | RUN_STARTED (the input's threadId/runId), CUSTOM `heddle.run` |
| `message.delta` of a new message id           | TEXT_MESSAGE_START (assistant), TEXT_MESSAGE_CONTENT      |
| `message.delta`                               | TEXT_MESSAGE_CONTENT                                      |
| `message.created` (assistant)                 | TEXT_MESSAGE_END (START/CONTENT first if not streamed)    |
| a tool call of Heddle's tools, recorded       | TOOL_CALL_START, _ARGS, _END, TOOL_CALL_RESULT            |
| a front-end tool call (`client` kind)         | TOOL_CALL_START, _ARGS, _END (the caller answers it)      |
| `run.updated` closed                          | RUN_FINISHED (success; `pendingToolCallIds` for front-end calls) |
| `run.updated` awaiting_input (ask_user)       | RUN_FINISHED, outcome interrupt (reason `input_required`) |
| `run.updated` awaiting_input (approvals)      | RUN_FINISHED, interrupt per call (`tool_approval`)        |
| `run.updated` awaiting_outcome (`confirm`)    | RUN_FINISHED, outcome interrupt (reason `tool_outcome`)   |
| `run.updated` failed (cancelled)              | RUN_FINISHED, outcome cancelled                           |
| `run.updated` failed                          | RUN_ERROR (the run's error code and message)              |

The request's stream ends there (`run_follow.settles`).

Tool calls are not events of the run's log: the calls are read from the database when the log
says something happened after them (a new message, an update of the run), one read each time.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from sqlalchemy import select

from heddle.db.base import Database
from heddle.interop.run_follow import HEARTBEAT, FollowedRun, settles
from heddle.loom.models import ToolCall
from heddle.loom.run_event import RunEvent
from heddle.runs_vocabulary import (
    AWAITING_INPUT,
    AWAITING_OUTCOME,
    CALL_AWAITING_APPROVAL,
    CALL_AWAITING_OUTCOME,
    CALL_PENDING,
    DELTA_EVENT,
    FAILED,
    MESSAGE_CREATED,
)

PROTOCOL_VERSION = "1.0"
_KIND_ASK, _KIND_CLIENT = "ask", "client"
_ANSWERED = ("succeeded", "failed", "resolved", "declined")
APPROVAL_SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
                   "required": ["approved"]}
OUTCOME_SCHEMA = {"type": "object", "properties": {"state": {"enum": ["occurred", "failed"]},
                                                   "detail": {"type": "object"}}, "required": ["state"]}
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
_CANCELLED = ("cancelled", "interrupted")


def _now_ms() -> int:
    return int(time.time() * 1000)


class Translator:
    """The AG-UI events of one request's stream, from the run's events and its tool calls."""

    def __init__(self, db: Database, run_id: uuid.UUID, thread_ref: str, run_ref: str, *,
                 commits_wake: bool = False):
        self.db = db
        # In-process execution: every commit of the run wakes its streams for a read, so the
        # calls need reading again only after such a read (`FollowedRun.reads`); with workers
        # (queue mode) a call's commit wakes nothing here, so each new reply reads them.
        self.commits_wake = commits_wake
        self.reads_seen = 1  # the stream's first read: the calls are read just before it
        self.follow: FollowedRun | None = None
        self.run_id = run_id
        self.thread_ref, self.run_ref = thread_ref, run_ref
        self.open_message: str | None = None  # the text message started and not yet ended
        self.ended_messages: set[str] = set()
        self.started_calls: set[str] = set()
        self.answered_calls: set[str] = set()
        self.client_calls: list[str] = []  # front-end calls started and not answered in this run
        self.calls: list[ToolCall] = []
        self.finished = False

    def started(self, heddle_thread: uuid.UUID) -> list[BaseEvent]:
        return [RunStartedEvent(thread_id=self.thread_ref, run_id=self.run_ref, protocol_version=PROTOCOL_VERSION,
                                timestamp=_now_ms()),
                CustomEvent(name="heddle.run", value={"run_id": str(self.run_id), "thread_id": str(heddle_thread)})]

    def _end_message(self, out: list[BaseEvent]) -> None:
        if self.open_message is not None:
            out.append(TextMessageEndEvent(message_id=self.open_message))
            self.ended_messages.add(self.open_message)
            self.open_message = None

    async def _read_calls(self) -> None:
        async with self.db.session() as session:
            self.calls = list(await session.scalars(
                select(ToolCall).where(ToolCall.run_id == self.run_id).order_by(ToolCall.seq)))

    async def prime(self, out: list[BaseEvent], *, told: frozenset[str] = frozenset(),
                    told_answered: frozenset[str] = frozenset()) -> None:
        """The run's calls as this stream starts. When it continues a run, the calls the previous
        request's stream told (agui_start.py `Started.told`) are not told again, only results it
        did not tell; calls made since, and any of a run followed from its start, are told now."""
        self.started_calls |= told
        self.answered_calls |= told_answered
        await self._tool_calls(out)

    def _calls_may_have_changed(self) -> bool:
        if not self.commits_wake or self.follow is None:
            return True
        return self.follow.reads > self.reads_seen

    async def _tool_calls(self, out: list[BaseEvent]) -> None:
        """The run's tool calls not told yet: started (and answered, when they have a result)."""
        if self.follow is not None:
            self.reads_seen = max(self.reads_seen, self.follow.reads)
        await self._read_calls()
        for call in self.calls:
            cid = str(call.id)
            if call.kind == _KIND_ASK or call.status == CALL_PENDING:
                continue  # a question is the run's interrupt; a pending call has not been made yet
            if cid not in self.started_calls:
                self._end_message(out)
                out += [ToolCallStartEvent(tool_call_id=cid, tool_call_name=call.name),
                        ToolCallArgsEvent(tool_call_id=cid, delta=json.dumps(call.args or {}, ensure_ascii=False)),
                        ToolCallEndEvent(tool_call_id=cid)]
                self.started_calls.add(cid)
                if call.kind == _KIND_CLIENT:
                    self.client_calls.append(cid)
            if call.status in _ANSWERED and cid not in self.answered_calls and call.kind != _KIND_CLIENT:
                body: dict[str, Any] = {"status": call.status, "result": call.result}
                if call.outcome_state:
                    body["outcome"] = {"state": call.outcome_state, "detail": call.outcome_detail or {}}
                out.append(ToolCallResultEvent(message_id=f"{cid}:result", tool_call_id=cid, role="tool",
                                               content=json.dumps(body, ensure_ascii=False, default=str)))
                self.answered_calls.add(cid)

    def _interrupts(self, run: dict[str, Any]) -> list[Interrupt]:
        pending = run.get("pending") or {}
        if pending.get("type") == "input":
            ask = next((c for c in self.calls if c.kind == _KIND_ASK and c.status == CALL_PENDING), None)
            interrupt_id = str(ask.id) if ask is not None else f"{run['id']}:input"
            return [Interrupt(id=interrupt_id, reason="input_required", message=pending.get("question"),
                              response_schema=ANSWER_SCHEMA)]
        reason, schema, status = (("tool_approval", APPROVAL_SCHEMA, CALL_AWAITING_APPROVAL)
                                  if pending.get("type") == "approval"
                                  else ("tool_outcome", OUTCOME_SCHEMA, CALL_AWAITING_OUTCOME))
        return [Interrupt(id=str(c.id), reason=reason, tool_call_id=str(c.id), response_schema=schema,
                          message=f"{c.name} {json.dumps(c.args or {}, ensure_ascii=False)}")
                for c in self.calls if c.status == status and c.kind != _KIND_CLIENT]

    async def _finish(self, run: dict[str, Any], out: list[BaseEvent]) -> None:
        self._end_message(out)
        await self._tool_calls(out)
        self.finished = True
        state = run.get("state")
        if state == FAILED:
            error = run.get("error") or {}
            if error.get("code") in _CANCELLED:
                out.append(RunFinishedEvent(thread_id=self.thread_ref, run_id=self.run_ref,
                                            outcome=RunFinishedCancelledOutcome(), timestamp=_now_ms()))
                return
            out.append(RunErrorEvent(message=str(error.get("message") or "The run failed."),
                                     code=error.get("code") or "internal_error", timestamp=_now_ms()))
            return
        outcome: Any = None
        if state in (AWAITING_INPUT, AWAITING_OUTCOME):
            interrupts = self._interrupts(run)
            if interrupts:
                outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        if outcome is None:
            waiting = [c for c in self.client_calls
                       if any(str(x.id) == c and x.status == CALL_AWAITING_OUTCOME for x in self.calls)]
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=waiting or None)
        result = {"heddle_run_id": str(self.run_id), "state": state}
        out.append(RunFinishedEvent(thread_id=self.thread_ref, run_id=self.run_ref, outcome=outcome,
                                    result=result, timestamp=_now_ms()))

    async def translate(self, events: list[RunEvent], after: int) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for event in events:
            data = event.payload
            if event.name == DELTA_EVENT:
                message_id = str(data.get("message_id"))
                if data.get("reset"):
                    if self.open_message == message_id:
                        self._end_message(out)
                    continue
                if message_id != self.open_message:
                    self._end_message(out)
                    if self._calls_may_have_changed():
                        await self._tool_calls(out)  # what the run did before this reply
                    out.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
                    self.open_message = message_id
                if data.get("delta"):
                    out.append(TextMessageContentEvent(message_id=message_id, delta=data["delta"]))
            elif event.name == MESSAGE_CREATED and data.get("role") == "assistant":
                message_id = str(data["id"])
                if message_id == self.open_message:
                    self._end_message(out)
                elif message_id not in self.ended_messages:  # not streamed (a question)
                    self._end_message(out)
                    await self._tool_calls(out)
                    out.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
                    if data.get("content"):
                        out.append(TextMessageContentEvent(message_id=message_id, delta=data["content"]))
                    out.append(TextMessageEndEvent(message_id=message_id))
                    self.ended_messages.add(message_id)
            elif settles(event, after):
                await self._finish(data, out)
                break
        return out

    def gone(self) -> list[BaseEvent]:
        """The run vanished (its thread erased) before it settled."""
        out: list[BaseEvent] = []
        self._end_message(out)
        out.append(RunErrorEvent(message="The run is gone (its thread was erased).", code="not_found"))
        self.finished = True
        return out


async def agui_stream(follow: FollowedRun, translator: Translator, heddle_thread: uuid.UUID, *,
                      told: frozenset[str] = frozenset(),
                      told_answered: frozenset[str] = frozenset()) -> AsyncIterator[str]:
    """The request's AG-UI events, encoded by ag-ui-protocol's `EventEncoder` (heartbeat comments
    pass through: AG-UI clients skip them, proxies keep the connection)."""
    encoder = EventEncoder()
    translator.follow = follow
    yield "".join(encoder.encode(e) for e in translator.started(heddle_thread))
    if translator.commits_wake or follow.after > 0:  # the calls before the log's first read
        early: list[BaseEvent] = []
        await translator.prime(early, told=told, told_answered=told_answered)
        if early:
            yield "".join(encoder.encode(e) for e in early)
    async for batch in follow.batches():
        if batch is None:
            yield HEARTBEAT
            continue
        events = await translator.translate(batch, follow.after)
        if events:
            yield "".join(encoder.encode(e) for e in events)
    if not translator.finished:
        yield "".join(encoder.encode(e) for e in translator.gone())
