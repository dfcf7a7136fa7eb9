"""One rule for U+0000 (NUL), wherever text enters Heddle.

PostgreSQL cannot store U+0000 in `text`, `varchar` or `jsonb` (SQLite can), so a NUL that
reached a statement answered 500 on PostgreSQL and 202 on SQLite, and a NUL in a tool host's
answer or a model's reply failed the run with `internal_error`. The rule, the same on both
databases:

- **Text a caller sends** (a JSON body's strings and keys, a form body, the query string, the
  path) is refused before any handler runs: 400 `invalid_request`, `details` naming each field
  (`refusal()`, called by the request middleware). A caller can fix its own input.
- **Text Heddle receives on a run's behalf** (a tool host's result, a model's reply, its tool
  arguments and streamed pieces, a provider's error message) cannot be sent back: each U+0000
  becomes U+FFFD (the replacement character) and the count is recorded in the trace
  (`nul_replaced` on the turn's `response`, and on the tool call). `replace_nul()` is the one
  helper the engine uses.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import parse_qsl

from heddle.errors import HeddleError

NUL = "\x00"
REPLACEMENT = "\ufffd"
_JSON_NUL = b"\\u0000"  # how a NUL appears in JSON text (a raw NUL byte is not valid JSON at all)
_URL_NUL = b"%00"
MAX_NAMED = 20  # fields named in one refusal


def replace_nul(value: Any) -> tuple[Any, int]:
    """`value` (text, or JSON-like lists and dicts, keys included) with every U+0000 replaced by
    U+FFFD, and how many were replaced. Unchanged values are returned as they are."""
    if isinstance(value, str):
        count = value.count(NUL)
        return (value.replace(NUL, REPLACEMENT), count) if count else (value, 0)
    if isinstance(value, dict):
        total, out = 0, {}
        for key, item in value.items():
            key, n_key = replace_nul(key)
            out[key], n_item = replace_nul(item)
            total += n_key + n_item
        return (out, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        items = [replace_nul(item) for item in value]
        total = sum(n for _, n in items)
        if not total:
            return value, 0
        return (type(value)(item for item, _ in items) if isinstance(value, tuple) else [i for i, _ in items]), total
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes, total = {}, 0
        for f in dataclasses.fields(value):
            new, n = replace_nul(getattr(value, f.name))
            if n:
                changes[f.name], total = new, total + n
        return (dataclasses.replace(value, **changes), total) if total else (value, 0)
    return value, 0


def mark_nul_replaced(fields: dict[str, Any], earlier_attempts: list[Any] | None) -> dict[str, Any]:
    """A tool call's fields to record (result, attempts, patch_ref) with U+0000 replaced; the
    count goes on its last attempt, where the trace reads it (`nul_replaced` on the call)."""
    clean, count = replace_nul(fields)
    if not count:
        return fields
    attempts = list(clean.get("attempts") or earlier_attempts or [])
    if attempts and isinstance(attempts[-1], dict):
        attempts[-1] = {**attempts[-1], "nul_replaced": count}
    else:
        attempts.append({"nul_replaced": count})
    return {**clean, "attempts": attempts}


def nul_replaced(attempts: list[Any] | None) -> int:
    """How many U+0000 were replaced in a tool call's recorded answers."""
    return sum(a.get("nul_replaced", 0) for a in attempts or () if isinstance(a, dict))


def _json_paths(value: Any, path: list[str], found: list[str]) -> None:
    if len(found) >= MAX_NAMED:
        return
    if isinstance(value, str):
        if NUL in value:
            found.append(".".join(path) or "body")
    elif isinstance(value, dict):
        for key, item in value.items():
            if NUL in key:
                found.append(".".join([*path, key.replace(NUL, REPLACEMENT)]))
            _json_paths(item, [*path, key.replace(NUL, REPLACEMENT)], found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _json_paths(item, [*path, str(i)], found)


def _detail(location: str, field: str | None) -> dict[str, Any]:
    return {"location": location, "field": field, "message": "must not contain U+0000 (NUL)",
            "type": "nul_character"}


def refusal(*, path: str, query_string: bytes, body: bytes | None, json_body: bool) -> HeddleError | None:
    """400 `invalid_request` naming every field of the request that holds a U+0000, else None.

    Costs two byte searches for an ordinary request; a body is parsed only when it has a NUL
    escape in it (which may still be an escaped backslash followed by `u0000`).
    """
    details: list[dict[str, Any]] = []
    if NUL in path:
        details.append(_detail("path", None))
    if _URL_NUL in query_string:
        for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
            if NUL in name or NUL in value:
                details.append(_detail("query", name.replace(NUL, REPLACEMENT)))
    if body:
        if json_body and _JSON_NUL in body:
            try:
                document = json.loads(body)
            except ValueError:
                document = None  # the app answers invalid JSON itself
            found: list[str] = []
            _json_paths(document, [], found)
            details += [_detail("body", field) for field in found]
        elif not json_body and _URL_NUL in body:  # a form body (pusher-js's channel auth, the login form)
            for name, value in parse_qsl(body.decode("latin-1"), keep_blank_values=True):
                if NUL in name or NUL in value:
                    details.append(_detail("body", name.replace(NUL, REPLACEMENT)))
    if not details:
        return None
    fields = ", ".join(sorted({d["field"] or d["location"] for d in details[:MAX_NAMED]}))
    return HeddleError("invalid_request", f"Text must not contain U+0000 (NUL): check {fields}.",
                       details=details[:MAX_NAMED])
