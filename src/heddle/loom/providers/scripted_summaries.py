"""What the `scripted` model says after a tool result: `You said: ...`, an Identify report, or a
one-line summary of another tool's result or outcome.

The engine hands tool results over as JSON text. The shapes read here are the ones the engine
produces (`{"answer"}` for `ask_user`; `{"status", "result", "outcome", "patch_ref", "error"}`
for other tools; the Identify result itself, or wrapped in `result`), and anything else is
summarised as-is, shortened, without failing.
"""

from __future__ import annotations

import json
from typing import Any

from heddle.loom.providers.base import ASK_USER_TOOL, ChatMessage, ModelToolCall

IDENTIFY_TOOL = "identify"
MAX_VALUE_CHARS = 200


def summarise_tool_result(message: ChatMessage, call: ModelToolCall | None) -> str:
    name = message.name or (call.name if call else None) or "tool"
    payload = _decode(message.content)
    if name == ASK_USER_TOOL:
        answer = payload.get("answer") if isinstance(payload, dict) else None
        if not isinstance(answer, str):
            answer = message.content or ""
        return f"You said: {answer}"
    if name == IDENTIFY_TOOL:
        identifier = call.arguments.get("identifier") if call else None
        return _identify_summary(identifier if isinstance(identifier, str) else None, payload, message)
    return _tool_summary(name, payload, message)


def _decode(content: str | None) -> Any:
    if not content:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return None


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return _shorten(value)
    return _shorten(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))


def _error_text(error: Any) -> str:
    """An error given as text, or as an object with a message, reason or code."""
    if isinstance(error, dict):
        for key in ("message", "error", "reason", "detail", "code"):
            if isinstance(error.get(key), str) and error[key]:
                return _shorten(error[key])
        return _compact(error) if error else "no detail given"
    if error is None or error == "":
        return "no detail given"
    return _compact(error)


def _raw(message: ChatMessage) -> str:
    return _shorten(message.content) if message.content else "no result"


def _tool_summary(name: str, payload: Any, message: ChatMessage) -> str:
    if not isinstance(payload, dict):
        return f"{name}: {_raw(message) if payload is None else _compact(payload)}"
    outcome = payload.get("outcome")
    if isinstance(outcome, dict) and outcome.get("state") == "occurred":
        return f"{name}: occurred."
    if isinstance(outcome, dict) and outcome.get("state") == "failed":
        return f"{name} failed: {_error_text(outcome.get('detail'))}"
    if payload.get("status") == "failed" or "error" in payload:
        return f"{name} failed: {_error_text(_failure_of(payload))}"
    if "result" in payload:
        return f"{name}: {_compact(payload['result'])}"
    if isinstance(payload.get("status"), str):
        return f"{name}: {_shorten(payload['status'])}."
    return f"{name}: {_compact(payload)}"


def _failure_of(payload: dict[str, Any]) -> Any:
    """The error of a failed call: top-level `error`, or the engine's `result.error`, or `result`."""
    if "error" in payload:
        return payload["error"]
    result = payload.get("result")
    if isinstance(result, dict) and "error" in result:
        return result["error"]
    return result


def _identify_data(payload: Any) -> dict[str, Any] | None:
    """The Identify result, whether it is the payload itself or wrapped in `result`."""
    if not isinstance(payload, dict):
        return None
    if isinstance(payload.get("result"), dict):
        return payload["result"]
    if isinstance(payload.get("result"), str):
        return payload
    return None


def _identify_summary(identifier: str | None, payload: Any, message: ChatMessage) -> str:
    data = _identify_data(payload)
    if data is None:
        return _tool_summary(IDENTIFY_TOOL, payload, message)
    institution = data.get("institution") if isinstance(data.get("institution"), dict) else {}
    subject = identifier or _first_text(institution.get("bic"), institution.get("code"))
    subject = _shorten(subject) if subject else "The identifier"
    rail = _first_text(data.get("rail"))
    verdict = data.get("result")
    if verdict == "identified":
        return _identified(subject, data, institution)
    if verdict == "not_found":
        return f"No institution found for {subject}" + (f" on {rail}." if rail else ".")
    if verdict == "unsupported":
        return f"{subject} is not supported" + (f" on {rail}." if rail else ".")
    return _tool_summary(IDENTIFY_TOOL, payload, message)


def _identified(subject: str, data: dict[str, Any], institution: dict[str, Any]) -> str:
    name = _first_text(institution.get("name")) or "an institution with no published name"
    address = institution.get("address") if isinstance(institution.get("address"), dict) else {}
    country = _first_text(data.get("country"), address.get("country"))
    rails = data.get("reachable_rails")
    if not isinstance(rails, list) or not rails:
        rails = [data["rail"]] if isinstance(data.get("rail"), str) else []
    rail_names = [_shorten(r) for r in rails if isinstance(r, str) and r]
    text = f"{subject} is {_shorten(name)}" + (f" ({_shorten(country)})" if country else "")
    text += f"; reachable on: {', '.join(rail_names)}." if rail_names else "."
    account = data.get("account")
    holder = account.get("name") if isinstance(account, dict) else None
    if isinstance(holder, str) and holder:
        text += f" Account holder: {_shorten(holder)}."
    return text


def _first_text(*values: Any) -> str | None:
    for value in values:
        if isinstance(value, str) and value:
            return value
    return None
