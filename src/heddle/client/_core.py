"""What the sync and async clients share: building requests and reading responses.

Each API call is described once as a `Call` (method, path, body, headers, the read model of its
`data`); `Heddle` and `AsyncHeddle` only differ in how they send it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, Generic, TypeVar

import httpx
from pydantic import BaseModel

from heddle.api.envelope import Page
from heddle.client.errors import HeddleAPIError, TransportError, error_class
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
from heddle.runs_vocabulary import SETTLED, TERMINAL
from heddle.workspaces.schemas import Workspace

T = TypeVar("T")
DEFAULT_RETRIES = 3  # connection failures, retried by httpx's transport with the same request
# 429s waited out (Retry-After, at most MAX_RATE_LIMIT_WAIT s each) before RateLimitedError is
# raised: a POST is safe to send again, it carries the same Idempotency-Key every time.
DEFAULT_RATE_LIMIT_RETRIES = 3
MAX_RATE_LIMIT_WAIT = 10.0


def rate_limit_wait(response: httpx.Response, attempt: int, retries: int) -> float | None:
    """Seconds to wait before sending the call again, or None to answer with this response."""
    if response.status_code != 429 or attempt >= retries:
        return None
    try:
        said = float(response.headers.get("retry-after", ""))
    except ValueError:
        said = 2.0 ** attempt  # no usable Retry-After: back off 1, 2, 4 s
    return min(max(said, 0.0), MAX_RATE_LIMIT_WAIT)


@dataclass
class Call(Generic[T]):
    method: str
    path: str
    model: Any  # the read model of `data`
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] | None = None  # a multipart upload (then no JSON body)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


class Auth:
    """Relay (workspace key + subject) or direct (a session token, or a function minting one)."""

    def __init__(self, api_key: str | None, token: str | None, get_token: Callable[[], Any] | None,
                 subject: str | None, connection: str | None):
        for name, value in (("api_key", api_key), ("token", token)):
            if value is not None and not (isinstance(value, str) and value.strip()):
                # An unset environment variable read as "" would otherwise fail at the first call.
                raise ValueError(f"{name} is empty: pass the workspace key (sk_...) as api_key for relay "
                                 "mode, or a session token (or get_token) for direct mode")
        if sum(x is not None for x in (api_key, token, get_token)) != 1:
            raise ValueError("give exactly one of api_key (relay), token or get_token (direct)")
        self.api_key, self.token, self.get_token = api_key, token, get_token
        self.subject, self.connection = subject, connection

    @property
    def relay(self) -> bool:
        return self.api_key is not None

    def loom_headers(self, subject: str | None, connection: str | None = None) -> dict[str, str]:
        if not self.relay:
            if subject is not None:
                raise ValueError("direct mode: the subject is the token's `sub`; do not pass subject")
            return {}
        h = {}
        if (s := subject or self.subject) is not None:
            h["Service-Subject"] = s
        if (c := connection or self.connection) is not None:
            h["Service-Connection"] = c
        return h


def idempotency(key: str | None) -> dict[str, str]:
    """An Idempotency-Key for a POST: generated once per call, so every retry sends the same."""
    return {"Idempotency-Key": key or str(uuid.uuid4())}


def parse(response: httpx.Response, model: Any) -> Any:
    """The typed `data` of a success envelope, or the family exception of an error envelope."""
    try:
        payload = response.json()
    except json.JSONDecodeError:
        payload = None
    if response.is_success and isinstance(payload, dict) and payload.get("status") == "success":
        data = payload.get("data")
        if model is None:
            return data
        adapter = model if isinstance(model, type) and issubclass(model, BaseModel) else None
        if adapter is not None:
            return adapter.model_validate(data, context={"lenient": True})
        return model(data)
    error = (payload or {}).get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        error = {"code": "internal_error" if response.status_code >= 500 else "invalid_response",
                 "message": f"HTTP {response.status_code} without a Heddle envelope"}
    cls = error_class(str(error.get("code")), response.status_code)
    raise cls(str(error.get("code")), str(error.get("message", "")), response.status_code,
              details=error.get("details"), request_id=response.headers.get("request-id"),
              headers=dict(response.headers))


def transport_error(exc: httpx.TransportError) -> TransportError:
    return TransportError("transport_error", f"{type(exc).__name__}: {exc}", 0)


def run_from_event(data: str) -> Run | None:
    """A `run.updated` SSE event's Run (the payload, or an envelope around it)."""
    try:
        payload = json.loads(data)
    except json.JSONDecodeError:
        return None
    if isinstance(payload, dict) and payload.get("status") == "success":
        payload = payload.get("data")
    return Run.model_validate(payload, context={"lenient": True})


@dataclass(frozen=True)
class RunEvent:
    """One event of `GET /v1/loom/runs/{id}/events`: its id (resume after it), name and data."""

    id: int
    event: str  # run.updated | message.created | message.delta
    data: dict[str, Any]

    @property
    def run(self) -> Run | None:
        """The Run of a `run.updated` event."""
        return Run.model_validate(self.data, context={"lenient": True}) if self.event == "run.updated" else None


def run_event(sse_id: str, event: str, data: str) -> RunEvent | None:
    """An SSE event of a run's stream as a RunEvent; None for anything else (a comment, a retry)."""
    try:
        payload = json.loads(data)
    except json.JSONDecodeError:
        return None
    if not isinstance(payload, dict) or not sse_id.isdigit():
        return None
    return RunEvent(int(sse_id), event, payload)


def is_event_stream(response: httpx.Response) -> bool:
    return response.status_code == 200 and response.headers.get("content-type", "").startswith("text/event-stream")


# --- the calls ---------------------------------------------------------------------------------

def workspace() -> Call[Workspace]:
    return Call("GET", "/v1/workspace", Workspace)


def identify(identifier: str, rail: str | None, country: str | None, account_number: str | None,
             key: str | None) -> Call[IdentifyResult]:
    body = _clean({"identifier": identifier, "rail": rail, "country": country, "account_number": account_number})
    return Call("POST", "/v1/identify", IdentifyResult, body=body, headers=idempotency(key))


def open_thread(auth: Auth, agent: str, subject: str | None, key: str | None) -> Call[Thread]:
    return Call("POST", "/v1/loom/threads", Thread, body={"agent": agent},
                headers={**auth.loom_headers(subject), **idempotency(key)})


def list_threads(auth: Auth, subject: str | None, agent: str | None, limit: int, after: str | None) -> Call[Page]:
    return Call("GET", "/v1/loom/threads", Page[Thread], params=_clean({"agent": agent, "limit": limit,
                                                                        "after": after}),
                headers=auth.loom_headers(subject))


def get_thread(auth: Auth, thread_id: str, subject: str | None) -> Call[ThreadDetail]:
    return Call("GET", f"/v1/loom/threads/{thread_id}", ThreadDetail, headers=auth.loom_headers(subject))


def delete_thread(auth: Auth, thread_id: str, subject: str | None) -> Call[ThreadDeleted]:
    return Call("DELETE", f"/v1/loom/threads/{thread_id}", ThreadDeleted, headers=auth.loom_headers(subject))


def delete_subject(subject: str) -> Call[SubjectDeleted]:
    from urllib.parse import quote

    return Call("DELETE", f"/v1/loom/subjects/{quote(subject, safe='')}", SubjectDeleted)


def post_message(auth: Auth, thread_id: str, content: str, subject: str | None, connection: str | None,
                 key: str | None, extra: dict[str, Any] | None = None) -> Call[MessageAccepted]:
    return Call("POST", f"/v1/loom/threads/{thread_id}/messages", MessageAccepted,
                body={"content": content, **(extra or {})},
                headers={**auth.loom_headers(subject, connection), **idempotency(key)})


def upload(auth: Auth, thread_id: str, data: bytes | str | os.PathLike | IO[bytes], name: str | None,
           subject: str | None, key: str | None) -> Call[AttachmentInfo]:
    """An upload of a file (bytes, a path or a binary file object) to the thread; the server
    decides its type from its bytes. The bytes are read once, so a 429 can send them again."""
    if isinstance(data, (str, os.PathLike)):
        name = name or os.path.basename(os.fspath(data))
        with open(data, "rb") as fh:
            data = fh.read()
    elif not isinstance(data, (bytes, bytearray)):
        name = name or os.path.basename(getattr(data, "name", "") or "") or None
        data = data.read()
    return Call("POST", f"/v1/loom/threads/{thread_id}/attachments", AttachmentInfo,
                files={"file": (name or "file", bytes(data))},
                headers={**auth.loom_headers(subject), **idempotency(key)})


def get_attachment(auth: Auth, attachment_id: str, subject: str | None) -> Call[AttachmentInfo]:
    return Call("GET", f"/v1/loom/attachments/{attachment_id}", AttachmentInfo, headers=auth.loom_headers(subject))


def list_memories(auth: Auth, subject: str | None, limit: int) -> Call[Page]:
    return Call("GET", "/v1/loom/memories", Page[Memory], params={"limit": limit}, headers=auth.loom_headers(subject))


def add_memory(auth: Auth, content: str, subject: str | None, key: str | None) -> Call[Memory]:
    return Call("POST", "/v1/loom/memories", Memory, body={"content": content},
                headers={**auth.loom_headers(subject), **idempotency(key)})


def delete_memory(auth: Auth, memory_id: str, subject: str | None) -> Call[MemoryDeleted]:
    return Call("DELETE", f"/v1/loom/memories/{memory_id}", MemoryDeleted, headers=auth.loom_headers(subject))


def list_messages(auth: Auth, thread_id: str, subject: str | None, limit: int, after: str | None) -> Call[Page]:
    return Call("GET", f"/v1/loom/threads/{thread_id}/messages", Page[Message],
                params=_clean({"limit": limit, "after": after}), headers=auth.loom_headers(subject))


def get_run(auth: Auth, run_id: str, subject: str | None) -> Call[Run]:
    return Call("GET", f"/v1/loom/runs/{run_id}", Run, headers=auth.loom_headers(subject))


def get_trace(auth: Auth, run_id: str, subject: str | None) -> Call[Trace]:
    return Call("GET", f"/v1/loom/runs/{run_id}/trace", Trace, headers=auth.loom_headers(subject))


def post_outcome(auth: Auth, run_id: str, tool_call_id: str, state: str, detail: dict[str, Any] | None,
                 subject: str | None, key: str | None) -> Call[Run]:
    body = _clean({"tool_call_id": tool_call_id, "state": state, "detail": detail})
    return Call("POST", f"/v1/loom/runs/{run_id}/outcome", Run, body=body,
                headers={**auth.loom_headers(subject), **idempotency(key)})


def approve(auth: Auth, run_id: str, tool_call_id: str, approved: bool, reason: str | None,
            subject: str | None, key: str | None) -> Call[Run]:
    body = _clean({"tool_call_id": tool_call_id, "approved": approved, "reason": reason})
    return Call("POST", f"/v1/loom/runs/{run_id}/approval", Run, body=body,
                headers={**auth.loom_headers(subject), **idempotency(key)})


def give_feedback(auth: Auth, message_id: str, rating: str, comment: str | None,
                  subject: str | None) -> Call[Feedback]:
    body = _clean({"rating": rating, "comment": comment})
    return Call("POST", f"/v1/loom/messages/{message_id}/feedback", Feedback, body=body,
                headers=auth.loom_headers(subject))


def withdraw_feedback(auth: Auth, message_id: str, subject: str | None) -> Call[Feedback]:
    return Call("DELETE", f"/v1/loom/messages/{message_id}/feedback", Feedback, headers=auth.loom_headers(subject))


def cancel(auth: Auth, run_id: str, subject: str | None, key: str | None) -> Call[Run]:
    return Call("POST", f"/v1/loom/runs/{run_id}/cancel", Run,
                headers={**auth.loom_headers(subject), **idempotency(key)})


def realtime_config(auth: Auth, subject: str | None) -> Call[RealtimeConfig]:
    return Call("GET", "/v1/loom/realtime/config", RealtimeConfig, headers=auth.loom_headers(subject))


__all__ = ["Auth", "Call", "HeddleAPIError", "SETTLED", "TERMINAL", "DEFAULT_RETRIES"]
