"""Driving `POST /v1/agui/{agent_id}` in tests: a RunAgentInput, the AG-UI events it streams back."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from support.sse import parse


def run_input(thread: str, *messages: dict[str, Any], tools: list | None = None,
              resume: list | None = None, run_id: str | None = None) -> dict[str, Any]:
    return {"threadId": thread, "runId": run_id or f"run-{uuid.uuid4().hex[:8]}", "state": {},
            "messages": list(messages), "tools": tools or [], "context": [], "forwardedProps": {},
            **({"resume": resume} if resume else {})}


def user(text: str) -> dict[str, Any]:
    return {"id": f"m-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}


def assistant(text: str | None = None, tool_calls: list | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"id": f"a-{uuid.uuid4().hex[:8]}", "role": "assistant"}
    if text is not None:
        msg["content"] = text
    if tool_calls:
        msg["toolCalls"] = tool_calls
    return msg


def tool_result(call_id: str, content: str) -> dict[str, Any]:
    return {"id": f"t-{uuid.uuid4().hex[:8]}", "role": "tool", "toolCallId": call_id, "content": content}


def stream(http: httpx.Client, agent: str, headers: dict, body: Any, *, limit: int | None = None,
           timeout: float = 20) -> tuple[int, list[dict[str, Any]] | dict[str, Any]]:
    """(status, AG-UI events) for a 200, (status, error envelope) otherwise; with `limit`, the client
    hangs up after that many events."""
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    with http.stream("POST", f"/v1/agui/{agent}", content=content, timeout=timeout,
                     headers={**headers, "Content-Type": "application/json", "Accept": "text/event-stream"}) as r:
        if r.status_code != 200:
            r.read()
            return r.status_code, r.json()
        assert r.headers["content-type"].startswith("text/event-stream")
        events: list[dict[str, Any]] = []
        for item in parse(r.iter_lines()):
            if "comment" in item:
                continue
            events.append(item["data"])
            if limit is not None and len(events) >= limit:
                break
        return 200, events


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    last = events[-1]
    assert last["type"] in ("RUN_FINISHED", "RUN_ERROR"), types(events)
    return last
