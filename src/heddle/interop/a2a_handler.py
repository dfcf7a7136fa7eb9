"""Heddle's A2A request handler: a2a-sdk's `RequestHandler` over Heddle's runs and threads.

a2a-sdk's JSON-RPC dispatcher (v1.0, with its v0.3 adapter on) parses and answers the protocol;
this handler does what each method asks with loom's own writes and reads, so a task *is* a run
(no second task store): `message/send` posts a message (a new run with `origin: a2a`, or the
answer of the run waiting for input), `tasks/get` and `tasks/list` read runs, `tasks/cancel`
cancels one, and the streaming methods follow the run's stored event log (run_follow.py),
whichever process executes it. The caller (authenticated by the route, as every `/v1` call)
and the agent come in the call context (`context.state["heddle"]`).

A Heddle refusal becomes the A2A error a client understands: an unknown or invisible task is
TaskNotFoundError (never another workspace's or subject's), a finished task's cancel
TaskNotCancelableError, anything else the caller must change InvalidParamsError with Heddle's
error code in `data.code`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types.a2a_pb2 import (
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from google.protobuf.json_format import MessageToDict
from sqlalchemy import func, select
from starlette.requests import Request

from heddle.api.deps import services
from heddle.auth.context import AuthContext
from heddle.errors import HeddleError
from heddle.interop import a2a_tasks
from heddle.interop.run_follow import follow_run, last_seq
from heddle.loom import approvals, cancellation, service
from heddle.loom import queries as q
from heddle.loom.models import Agent, Run
from heddle.loom.models import Message as MessageRow
from heddle.loom.serializers import message_dict
from heddle.loom.views import render_run
from heddle.observability.metrics import process_metrics
from heddle.process_services import database
from heddle.runs_vocabulary import (
    AWAITING_INPUT,
    DELTA_EVENT,
    MESSAGE_CREATED,
    ORIGIN_A2A,
    RUN_UPDATED,
    SETTLED,
    TERMINAL,
)

MAX_TEXT = 32_000
MAX_PAGE = 100


@dataclass(frozen=True)
class A2ACall:
    """Who calls, which published agent, and the HTTP request (for its process's services)."""

    auth: AuthContext
    agent: Agent
    request: Request


def _call(context: ServerCallContext) -> A2ACall:
    return context.state["heddle"]


def _refused(exc: HeddleError) -> Exception:
    if exc.code == "not_found":
        return TaskNotFoundError(message=exc.message)
    return InvalidParamsError(message=exc.message, data={"code": exc.code})


@asynccontextmanager
async def _work(call: A2ACall):
    """The call's write unit of work (the caller was authenticated by the route): leaving it
    commits, then runs the after-commit hooks (the run submitted, its events published)."""
    svc = services(call.request)

    async def commit(session) -> None:
        await session.commit()

    try:
        async with database(call.request).write_session() as session, svc.uow.joined(
                session, finish=commit, realtime=call.auth.workspace.realtime_enabled) as work:
            yield work
    except HeddleError as exc:
        raise _refused(exc) from None


def _answers(message: Message) -> list[dict[str, Any]]:
    """Data parts answering calls a task waits on: `{"tool_call_id", "approved", "reason"?}` for an
    approval, `{"tool_call_id", "state": "occurred"|"failed", "detail"?}` for an outcome."""
    found = []
    for part in message.parts:
        if part.WhichOneof("content") == "data":
            value = MessageToDict(part.data)
            if isinstance(value, dict) and isinstance(value.get("tool_call_id"), str):
                found.append(value)
    return found


async def _answer_calls(work, call: A2ACall, run: Run, answers: list[dict[str, Any]]) -> None:
    for answer in answers:
        if isinstance(answer.get("approved"), bool):
            reason = answer.get("reason")
            await approvals.answer(work, call.auth, str(run.id), answer["tool_call_id"], answer["approved"],
                                   str(reason)[:2000] if reason is not None else None)
        elif answer.get("state") in ("occurred", "failed"):
            detail = answer.get("detail")
            await service.post_outcome(work, call.auth, str(run.id), answer["tool_call_id"], answer["state"],
                                       detail if isinstance(detail, dict) else {})
        else:
            raise InvalidParamsError(message="An answer names tool_call_id with approved (true/false) or state "
                                             "(occurred/failed).", data={"code": "invalid_request"})


def _text(message: Message) -> str:
    text = "\n".join(part.text for part in message.parts if part.WhichOneof("content") == "text").strip()
    if not text:
        raise InvalidParamsError(message="The message needs a text part (the agent reads text).")
    if len(text) > MAX_TEXT:
        raise InvalidParamsError(message=f"The message's text is longer than {MAX_TEXT} characters.")
    return text


async def _visible_run(session, call: A2ACall, task_id: str, *, for_update: bool = False) -> Run:
    try:
        run = await q.visible_run(session, call.auth, task_id, for_update=for_update)
    except HeddleError:
        raise TaskNotFoundError(message=f"No task {task_id[:80]!r} of this agent is visible to this caller.") from None
    if run.agent_id != call.agent.id:
        raise TaskNotFoundError(message=f"No task {task_id[:80]!r} of this agent is visible to this caller.")
    return run


async def _thread(session, call: A2ACall, context_id: str) -> str:
    """The thread a message goes to: its `contextId` (the caller's thread with this agent), or
    the subject's thread with the agent."""
    if context_id:
        try:
            thread = await q.visible_thread(session, call.auth, context_id)
        except HeddleError:
            raise InvalidParamsError(message=f"No context {context_id[:80]!r} of this caller.",
                                     data={"code": "not_found"}) from None
        if thread.agent_id != call.agent.id:
            raise InvalidParamsError(message="That context belongs to another agent.", data={"code": "not_found"})
        return str(thread.id)
    data, _ = await service.open_thread(session, call.auth, call.agent.id)
    return data["id"]


async def task(call: A2ACall, run_id: uuid.UUID | str, history_length: int | None = None) -> Task:
    async with database(call.request).session() as session:
        run = await _visible_run(session, call, str(run_id))
        data = await render_run(session, run)
        rows = await session.scalars(select(MessageRow).where(MessageRow.run_id == run.id).order_by(MessageRow.seq))
        messages = [message_dict(m) for m in rows]
    return a2a_tasks.task_of(data, messages, history_length=history_length)


class HeddleA2AHandler(RequestHandler):
    """a2a-sdk's request handler interface, over Heddle's runs (see the module docstring)."""

    async def _send(self, call: A2ACall, message: Message) -> tuple[uuid.UUID, int]:
        """Post the message; the run it started or answered, and the last seq of its log before."""
        answers = _answers(message) if message.task_id else []
        text = _text(message) if not answers else ""
        call.auth.require_subject()
        async with _work(call) as work:
            session = work.session
            after = 0
            if message.task_id:
                run = await _visible_run(session, call, message.task_id)
                after = await last_seq(session, run.id)
                if answers:  # approvals or outcomes of the calls the task waits on
                    await _answer_calls(work, call, run, answers)
                    return run.id, after
                if run.state != AWAITING_INPUT:
                    raise InvalidParamsError(
                        message=f"Task {run.id} is {run.state}: only a task in input-required for a question "
                                "takes a message; send one without taskId for a new task.",
                        data={"code": "task_not_awaiting_input", "state": run.state})
                thread_id = str(run.thread_id)
            else:
                thread_id = await _thread(session, call, message.context_id)
            data = await service.post_message(work, call.auth, thread_id, text, origin=ORIGIN_A2A)
        process_metrics(call.request).interop_requests.labels("a2a").inc()
        return uuid.UUID(data["run_id"]), after

    async def _settled(self, call: A2ACall, run_id: uuid.UUID, after: int) -> None:
        async for _ in self._events(call, run_id, after):
            pass

    async def _events(self, call: A2ACall, run_id: uuid.UUID, after: int) -> AsyncIterator[Any]:
        async for batch in follow_run(call.request, run_id, after).batches():
            for event in batch or ():
                yield event

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        call = _call(context)
        run_id, after = await self._send(call, params.message)
        history = params.configuration.history_length if params.configuration.HasField("history_length") else None
        if not params.configuration.return_immediately:
            try:
                async with asyncio.timeout(services(call.request).settings.run_max_seconds + 5):
                    await self._settled(call, run_id, after)
            except TimeoutError:
                pass  # the task as it is now: the client can get it later
        return await task(call, run_id, history)

    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator[Any]:
        call = _call(context)
        run_id, after = await self._send(call, params.message)
        async for event in self._stream(call, run_id, after, new=not params.message.task_id):
            yield event

    async def _stream(self, call: A2ACall, run_id: uuid.UUID, after: int, *, new: bool = False) -> AsyncIterator[Any]:
        """The task (a `new` one as it was submitted), then its status changes and its reply's
        pieces (artifact `reply`, appended) from its log after `after`, until the run settles."""
        first = await task(call, run_id)
        yield a2a_tasks.as_submitted(first) if new else first
        task_id, context_id = first.id, first.context_id
        started: set[str] = set()
        async for event in self._events(call, run_id, after):
            data = event.payload
            if event.name == DELTA_EVENT and data.get("delta"):
                artifact_id = str(data.get("message_id"))
                yield TaskArtifactUpdateEvent(
                    task_id=task_id, context_id=context_id, append=artifact_id in started, last_chunk=False,
                    artifact=Artifact(artifact_id=artifact_id, name="reply", parts=[Part(text=data["delta"])]))
                started.add(artifact_id)
            elif event.name == MESSAGE_CREATED and data.get("role") == "assistant" and data["id"] not in started:
                yield TaskArtifactUpdateEvent(
                    task_id=task_id, context_id=context_id, append=False, last_chunk=True,
                    artifact=Artifact(artifact_id=data["id"], name="reply", parts=[Part(text=data["content"])]))
            elif event.name == RUN_UPDATED and (event.seq or 0) > after:
                if data.get("state") in SETTLED:
                    yield await task(call, run_id)  # the settled task, whole (status, artifacts)
                    return
                status = TaskStatus(state=a2a_tasks.task_state(data))
                status.timestamp.FromJsonString(data["updated_at"])
                yield TaskStatusUpdateEvent(task_id=task_id, context_id=context_id, status=status)

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        history = params.history_length if params.HasField("history_length") else None
        return await task(_call(context), params.id, history)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        call = _call(context)
        auth = call.auth
        size = min(params.page_size or 50, MAX_PAGE)
        try:
            offset = int(params.page_token or 0)
        except ValueError:
            raise InvalidParamsError(message="pageToken is not one this server gave.") from None
        query = select(Run.id).where(Run.workspace_id == auth.workspace_id, Run.agent_id == call.agent.id)
        if auth.subject is not None:
            query = query.where(Run.subject == auth.subject)
        if params.context_id:
            try:
                query = query.where(Run.thread_id == uuid.UUID(params.context_id))
            except ValueError:
                query = query.where(Run.thread_id.is_(None))
        if params.status:
            query = query.where(Run.state.in_(a2a_tasks.HEDDLE_STATES.get(params.status, ("none",))))
        async with database(call.request).session() as session:
            total = int(await session.scalar(select(func.count()).select_from(query.subquery())))
            ids = list(await session.scalars(query.order_by(Run.created_at.desc(), Run.id)
                                             .offset(max(0, offset)).limit(size)))
        history = params.history_length if params.HasField("history_length") else 0
        tasks = [await task(call, run_id, history) for run_id in ids]
        if params.status:  # failed and canceled are both Heddle's `failed`
            tasks = [t for t in tasks if t.status.state == params.status]
        next_token = str(offset + size) if offset + size < total else ""
        return ListTasksResponse(tasks=tasks, next_page_token=next_token, page_size=size, total_size=total)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        call = _call(context)
        async with _work(call) as work:
            await _visible_run(work.session, call, params.id)
            try:
                await cancellation.cancel_run(work, call.auth, params.id)
            except HeddleError as exc:
                if exc.code == "run_terminal":
                    raise TaskNotCancelableError(message=exc.message) from None
                raise
        return await task(call, params.id)

    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest,
                                   context: ServerCallContext) -> AsyncGenerator[Any]:
        call = _call(context)
        first = await task(call, params.id)
        if first.metadata["heddle_state"] in TERMINAL:
            yield first
            return
        async for event in self._stream(call, uuid.UUID(first.id), 0):
            yield event

    async def on_create_task_push_notification_config(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError(message="Use Heddle's run webhooks (docs/webhooks.md).")

    async def on_get_task_push_notification_config(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError(message="Use Heddle's run webhooks (docs/webhooks.md).")

    async def on_list_task_push_notification_configs(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError(message="Use Heddle's run webhooks (docs/webhooks.md).")

    async def on_delete_task_push_notification_config(self, params: Any, context: ServerCallContext) -> None:
        raise PushNotificationNotSupportedError(message="Use Heddle's run webhooks (docs/webhooks.md).")

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> Any:
        raise ExtendedAgentCardNotConfiguredError(message="The agent card is the whole card.")

