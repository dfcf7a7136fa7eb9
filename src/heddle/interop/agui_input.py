"""What one AG-UI `RunAgentInput` asks of Heddle (pure: no I/O).

AG-UI's client sends the whole conversation each time; Heddle keeps the conversation itself
(loom/history.py), so only what the input adds after the agent's last word matters:

- `resume` entries answer the interrupts the previous request ended with (an `ask_user`
  question, approvals, outcomes of `confirm` tools): each names a Heddle tool call;
- trailing `tool` messages answer the caller's own front-end tools (their `toolCallId` is the
  Heddle tool call's id);
- a trailing `user` message is the next thing the user said (a new run, or the answer to a
  question the run asked).

`parse` validates the body with ag-ui-protocol's own `RunAgentInput` model and raises
`HeddleError("invalid_request")` naming each bad field, as every `/v1` body does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import ValidationError

from heddle.errors import HeddleError

MAX_CONTENT = 32_000  # as a posted message (loom/schemas.py PostMessage)
MAX_TOOLS = 64  # front-end tools one input may offer
MAX_RESUME = 64


@dataclass(frozen=True)
class Resume:
    """One answered interrupt: `interrupt_id` is a Heddle tool call id."""

    interrupt_id: str
    status: str  # resolved | cancelled
    payload: Any


@dataclass(frozen=True)
class Ask:
    """What the input asks: answers to interrupts, results of front-end tools, a user message."""

    resume: list[Resume] = field(default_factory=list)
    tool_results: list[tuple[str, str]] = field(default_factory=list)  # (tool call id, content)
    user_text: str | None = None
    client_tools: list[dict[str, Any]] = field(default_factory=list)  # {name, description, parameters}

    @property
    def empty(self) -> bool:
        return not self.resume and not self.tool_results and self.user_text is None


def _invalid(message: str, errors: list[dict[str, Any]] | None = None) -> HeddleError:
    return HeddleError("invalid_request", message, details=errors or [])


def parse(raw: Any) -> RunAgentInput:
    """The body as ag-ui-protocol's `RunAgentInput`, or 400 `invalid_request` naming each bad field."""
    if not isinstance(raw, dict):
        raise _invalid("The body must be an AG-UI RunAgentInput object.",
                       [{"location": "body", "field": "", "message": "not an object", "type": "type_error"}])
    try:
        body = RunAgentInput.model_validate(raw)
    except ValidationError as exc:
        details = [{"location": "body", "field": ".".join(str(p) for p in e["loc"]), "message": e["msg"],
                    "type": e["type"]} for e in exc.errors()[:20]]
        raise _invalid("The body is not a valid AG-UI RunAgentInput.", details) from None
    for name, value in (("threadId", body.thread_id), ("runId", body.run_id)):
        if not value or len(value) > 200:
            raise _invalid(f"{name} must be 1 to 200 characters.",
                           [{"location": "body", "field": name, "message": "length", "type": "value_error"}])
    if len(body.tools or []) > MAX_TOOLS or len(body.resume or []) > MAX_RESUME:
        raise _invalid(f"At most {MAX_TOOLS} tools and {MAX_RESUME} resume entries.")
    return body


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a multimodal one."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        text = getattr(part, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


def ask_of(body: RunAgentInput) -> Ask:
    """What `body` asks, from its resume entries and the messages after the last assistant one."""
    messages = list(body.messages)
    trailing: list[Any] = []
    for message in reversed(messages):
        role = getattr(message, "role", None)
        if role == "assistant":
            break
        trailing.append(message)
    trailing.reverse()
    user_text: str | None = None
    results: list[tuple[str, str]] = []
    for message in trailing:
        role = getattr(message, "role", None)
        if role == "user":
            user_text = _text(message.content).strip() or None
        elif role == "tool":
            content = _text(message.content)
            results.append((message.tool_call_id, content))
    if user_text is not None and len(user_text) > MAX_CONTENT:
        raise _invalid(f"The user message is longer than {MAX_CONTENT} characters.",
                       [{"location": "body", "field": "messages", "message": "too long", "type": "value_error"}])
    resume = [Resume(entry.interrupt_id, entry.status, entry.payload) for entry in body.resume or []]
    tools = [{"name": tool.name, "description": tool.description,
              "parameters": tool.parameters if isinstance(tool.parameters, dict) else {"type": "object"}}
             for tool in body.tools or []]
    return Ask(resume=resume, tool_results=results, user_text=user_text, client_tools=tools)


def _payload_error(message: str) -> list[dict[str, Any]]:
    return [{"location": "body", "field": "resume.payload", "message": message, "type": "value_error"}]


def answer_text(payload: Any) -> str:
    """The user's answer to an `ask_user` interrupt: a string payload, `{"answer": ...}`, or its JSON."""
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("answer"), str):
        return payload["answer"]
    return json.dumps(payload, ensure_ascii=False)


def approval_of(entry: Resume) -> tuple[bool, str | None]:
    """An approval interrupt's answer: `{"approved": bool, "reason"?}`; `cancelled` declines."""
    if entry.status == "cancelled":
        return False, "Cancelled in the user interface."
    payload = entry.payload
    if isinstance(payload, bool):
        return payload, None
    if isinstance(payload, dict) and isinstance(payload.get("approved"), bool):
        reason = payload.get("reason")
        return payload["approved"], str(reason)[:2000] if reason is not None else None
    raise _invalid("An approval's resume payload must be {\"approved\": true|false}.",
                   _payload_error("not an approval"))


def outcome_of(entry: Resume) -> tuple[str, dict[str, Any]]:
    """A `confirm` call's outcome: `{"state": "occurred"|"failed", "detail"?}`; `cancelled` is failed."""
    if entry.status == "cancelled":
        return "failed", {"cancelled": True}
    payload = entry.payload
    if isinstance(payload, dict) and payload.get("state") in ("occurred", "failed"):
        detail = payload.get("detail")
        return payload["state"], detail if isinstance(detail, dict) else {}
    raise _invalid("An outcome's resume payload must be {\"state\": \"occurred\"|\"failed\", \"detail\"?}.",
                   _payload_error("not an outcome"))
