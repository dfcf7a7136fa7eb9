"""`Heddle`: the synchronous client (httpx). `AsyncHeddle` in heddle.client.aio is its twin."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import httpx
from httpx_sse import connect_sse

from heddle.api.envelope import Page
from heddle.client import _core as c
from heddle.client.errors import RunWaitTimeout
from heddle.identify.schemas import IdentifyResult
from heddle.loom.feedback_schemas import Feedback
from heddle.loom.memory_schemas import Memory, MemoryDeleted
from heddle.loom.schemas import (
    AttachmentInfo,
    Message,
    MessageAccepted,
    Run,
    SubjectDeleted,
    Thread,
    ThreadDeleted,
    ThreadDetail,
    Trace,
)
from heddle.realtime.schemas import RealtimeConfig
from heddle.workspaces.schemas import Workspace


class Heddle:
    """A Heddle server, called with a workspace key (relay) or a session token (direct).

    Relay: `Heddle(base_url, api_key="sk_…", subject="web:alice")` (subject may also be given per
    call). Direct: `Heddle(base_url, token=jwt)` or `get_token=callable` (called for each request;
    cache in it). Connection failures are retried by httpx's transport (`retries`), each POST with
    the same generated Idempotency-Key; a 429 is waited out as its Retry-After says
    (`rate_limit_retries` times, then RateLimitedError).
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, token: str | None = None,
                 get_token: Callable[[], str] | None = None, subject: str | None = None,
                 connection: str | None = None, timeout: float = 30.0, retries: int = c.DEFAULT_RETRIES,
                 poll_interval: float = 0.2, rate_limit_retries: int = c.DEFAULT_RATE_LIMIT_RETRIES,
                 transport: httpx.BaseTransport | None = None):
        self.auth = c.Auth(api_key, token, get_token, subject, connection)
        self.poll_interval = poll_interval
        self.rate_limit_retries = rate_limit_retries
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout,
                                  transport=transport or httpx.HTTPTransport(retries=retries))
        self.loom = Loom(self)

    def _bearer(self) -> dict[str, str]:
        a = self.auth
        return {"Authorization": f"Bearer {a.api_key or a.token or a.get_token()}"}

    def request(self, call: c.Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(call.method, call.path, json=call.body, params=call.params,
                                              files=call.files,
                                              headers={**self._bearer(), **call.headers})
            except httpx.TransportError as exc:
                raise c.transport_error(exc) from exc
            wait = c.rate_limit_wait(response, attempt, self.rate_limit_retries)
            if wait is None:
                return c.parse(response, call.model)
            attempt += 1
            time.sleep(wait)

    def workspace(self) -> Workspace:
        return self.request(c.workspace())

    def identify(self, identifier: str, *, rail: str | None = None, country: str | None = None,
                 account_number: str | None = None, idempotency_key: str | None = None) -> IdentifyResult:
        return self.request(c.identify(identifier, rail, country, account_number, idempotency_key))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Heddle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunHandle:
    """The answer to a posted message: the run it started or resumed, and `wait()` for it."""

    def __init__(self, loom: Loom, accepted: MessageAccepted, thread_id: str, subject: str | None):
        self._loom, self.accepted, self.thread_id, self.subject = loom, accepted, thread_id, subject
        self.run_id, self.message_id, self.run = accepted.run_id, accepted.message_id, accepted.run

    def wait(self, *, until: Iterable[str] = c.SETTLED, timeout: float = 60.0) -> Run:
        self.run = self._loom.wait(self.run_id, subject=self.subject, until=until, timeout=timeout)
        return self.run


class Loom:
    def __init__(self, client: Heddle):
        self._c = client

    def open_thread(self, agent: str, *, subject: str | None = None, idempotency_key: str | None = None) -> Thread:
        return self._c.request(c.open_thread(self._c.auth, agent, subject, idempotency_key))

    def list_threads(self, *, subject: str | None = None, agent: str | None = None, limit: int = 20,
                     after: str | None = None) -> Page[Thread]:
        return self._c.request(c.list_threads(self._c.auth, subject, agent, limit, after))

    def post_message(self, thread_id: str, content: str, *, subject: str | None = None,
                     connection: str | None = None, idempotency_key: str | None = None,
                     **extra: Any) -> RunHandle:
        """Post a user message (it starts a run, or answers the run awaiting input)."""
        call = c.post_message(self._c.auth, thread_id, content, subject, connection, idempotency_key, extra)
        return RunHandle(self, self._c.request(call), thread_id, subject)

    def upload(self, thread_id: str, data: bytes | str | os.PathLike | IO[bytes], *, name: str | None = None,
               subject: str | None = None, idempotency_key: str | None = None) -> AttachmentInfo:
        """Upload a file to the thread; send its `id` in `post_message(..., attachments=[id])`."""
        return self._c.request(c.upload(self._c.auth, thread_id, data, name, subject, idempotency_key))

    def get_attachment(self, attachment_id: str, *, subject: str | None = None) -> AttachmentInfo:
        return self._c.request(c.get_attachment(self._c.auth, attachment_id, subject))

    def send(self, agent: str, content: str, *, subject: str | None = None,
             connection: str | None = None) -> RunHandle:
        """Open (or reuse) the subject's thread with `agent` and post `content` to it."""
        thread = self.open_thread(agent, subject=subject)
        return self.post_message(thread.id, content, subject=subject, connection=connection)

    def get_thread(self, thread_id: str, *, subject: str | None = None) -> ThreadDetail:
        return self._c.request(c.get_thread(self._c.auth, thread_id, subject))

    def delete_thread(self, thread_id: str, *, subject: str | None = None) -> ThreadDeleted:
        """Erase the thread: its messages, runs, turns and tool calls."""
        return self._c.request(c.delete_thread(self._c.auth, thread_id, subject))

    def delete_subject(self, subject: str) -> SubjectDeleted:
        """Erase every thread of a person (relay key only)."""
        return self._c.request(c.delete_subject(subject))

    def list_memories(self, *, subject: str | None = None, limit: int = 100) -> Page[Memory]:
        """What agents remember about the subject (the token's own in direct mode), newest first."""
        return self._c.request(c.list_memories(self._c.auth, subject, limit))

    def add_memory(self, content: str, *, subject: str | None = None,
                   idempotency_key: str | None = None) -> Memory:
        """Remember a fact about the subject (workspace key only)."""
        return self._c.request(c.add_memory(self._c.auth, content, subject, idempotency_key))

    def delete_memory(self, memory_id: str, *, subject: str | None = None) -> MemoryDeleted:
        """Delete one of the subject's facts (404 for another subject's)."""
        return self._c.request(c.delete_memory(self._c.auth, memory_id, subject))

    def list_messages(self, thread_id: str, *, subject: str | None = None, limit: int = 50,
                      after: str | None = None) -> Page[Message]:
        return self._c.request(c.list_messages(self._c.auth, thread_id, subject, limit, after))

    def get_run(self, run_id: str, *, subject: str | None = None) -> Run:
        return self._c.request(c.get_run(self._c.auth, run_id, subject))

    def get_trace(self, run_id: str, *, subject: str | None = None) -> Trace:
        return self._c.request(c.get_trace(self._c.auth, run_id, subject))

    def post_outcome(self, run_id: str, tool_call_id: str, state: str, *, detail: dict[str, Any] | None = None,
                     subject: str | None = None, idempotency_key: str | None = None) -> Run:
        return self._c.request(c.post_outcome(self._c.auth, run_id, tool_call_id, state, detail, subject,
                                              idempotency_key))

    def approve(self, run_id: str, tool_call_id: str, approved: bool, *, reason: str | None = None,
                subject: str | None = None, idempotency_key: str | None = None) -> Run:
        return self._c.request(c.approve(self._c.auth, run_id, tool_call_id, approved, reason, subject,
                                         idempotency_key))

    def feedback(self, message_id: str, rating: str, *, comment: str | None = None,
                 subject: str | None = None) -> Feedback:
        """Rate an assistant message `up` or `down` (replacing the subject's earlier rating)."""
        return self._c.request(c.give_feedback(self._c.auth, message_id, rating, comment, subject))

    def withdraw_feedback(self, message_id: str, *, subject: str | None = None) -> Feedback:
        """Withdraw the subject's rating of an assistant message."""
        return self._c.request(c.withdraw_feedback(self._c.auth, message_id, subject))

    def cancel(self, run_id: str, *, subject: str | None = None, idempotency_key: str | None = None) -> Run:
        return self._c.request(c.cancel(self._c.auth, run_id, subject, idempotency_key))

    def realtime_config(self, *, subject: str | None = None) -> RealtimeConfig:
        return self._c.request(c.realtime_config(self._c.auth, subject))

    def wait(self, run_id: str, *, subject: str | None = None, until: Iterable[str] = c.SETTLED,
             timeout: float = 60.0) -> Run:
        """The run once its state is in `until` (default: settled: closed, failed or awaiting).

        Follows the run's event stream (`GET /v1/loom/runs/{id}/events`) when the server offers
        it, and polls `GET /v1/loom/runs/{id}` otherwise (or after the stream ends early).
        """
        wanted, deadline = frozenset(until), time.monotonic() + timeout
        run = self.get_run(run_id, subject=subject)
        if run.state in wanted:
            return run
        streamed = self._follow_events(run_id, subject, wanted, deadline)
        if streamed is not None:
            return streamed
        delay = self._c.poll_interval
        while time.monotonic() < deadline:
            run = self.get_run(run_id, subject=subject)
            if run.state in wanted:
                return run
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, 2.0)
        raise RunWaitTimeout(run, timeout)

    def events(self, run_id: str, *, subject: str | None = None, after: int = 0,
               read_timeout: float = 60.0) -> Iterator[c.RunEvent]:
        """The run's events as they are stored, after the event whose id is `after`
        (`GET /v1/loom/runs/{id}/events`): `message.delta` pieces of a reply as the model writes
        it, `message.created`, `run.updated` (`.run`). Ends after the run's terminal event; stop
        reading earlier (a run awaiting input) by leaving the loop. A refused request raises its
        API error; a broken stream, TransportError (resume with `after=` the last id seen).
        `read_timeout` must exceed the server's heartbeat (HEDDLE_SSE_HEARTBEAT_SECONDS, 15 s)."""
        headers = {**self._c._bearer(), **self._c.auth.loom_headers(subject), "Accept": "text/event-stream",
                   "Last-Event-ID": str(after)}
        try:
            with connect_sse(self._c._http, "GET", f"/v1/loom/runs/{run_id}/events", headers=headers,
                             timeout=httpx.Timeout(30.0, read=read_timeout)) as source:
                if not c.is_event_stream(source.response):
                    source.response.read()
                    c.parse(source.response, None)  # raises the error envelope's exception
                    return
                for sse in source.iter_sse():
                    if (event := c.run_event(sse.id, sse.event, sse.data)) is not None:
                        yield event
        except httpx.TransportError as exc:
            raise c.transport_error(exc) from exc

    def _follow_events(self, run_id: str, subject: str | None, wanted: frozenset[str],
                       deadline: float) -> Run | None:
        if getattr(self._c, "_no_event_stream", False):
            return None
        headers = {**self._c._bearer(), **self._c.auth.loom_headers(subject), "Accept": "text/event-stream"}
        try:
            with connect_sse(self._c._http, "GET", f"/v1/loom/runs/{run_id}/events", headers=headers,
                             timeout=httpx.Timeout(max(0.1, deadline - time.monotonic()))) as source:
                if not c.is_event_stream(source.response):
                    if source.response.status_code in (404, 405):
                        self._c._no_event_stream = True  # an older server: poll from now on
                    return None
                for event in source.iter_sse():
                    if event.event == "run.updated" and (run := c.run_from_event(event.data)) is not None:
                        if run.state in wanted:
                            return run
        except httpx.HTTPError:
            return None  # the stream broke or timed out: polling decides
        return None
