"""Structured replies: an agent whose file gives `output: {schema}` answers with a JSON object
valid against it (issue 45).

The provider is asked for the shape its own way (loom/providers/output.py). The engine checks the
answer here with jsonschema: valid, it becomes the message's `data` (its JSON text the
`content`); not JSON or not valid, the model gets one repair attempt, the same conversation plus
its reply and what was wrong with it; invalid again, the run fails with `invalid_output`. Both
attempts are turns of the trace (the first with `response.output_error`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from heddle.loom.providers.base import ChatMessage

REPAIR_PROMPT = ("Your last reply does not match the required output schema: {error}. Reply again with only "
                 "a JSON object that is valid against the schema.")


def check(schema: dict[str, Any], text: str | None) -> tuple[Any, str | None]:
    """The reply's object if `text` is JSON valid against `schema`, else None and why not."""
    try:
        value = json.loads(text or "")
    except ValueError as exc:
        return None, f"the reply is not JSON ({getattr(exc, 'msg', str(exc))})"
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    error = best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        return None, f"{where}: {error.message[:300]}"
    return value, None


@dataclass(frozen=True)
class Shaped:
    """A structured turn as checked: the reply to record, its object (or why it is invalid), and
    the first, invalid reply when a repair was asked for."""

    reply: Any  # engine.Reply
    data: Any = None
    error: str | None = None
    first: Any = None  # engine.Reply of the first attempt
    first_error: str | None = None


async def shape(call: Callable[[Any], Awaitable[Any]], turn: Any, reply: Any) -> Shaped | None:
    """Check `reply` against `turn.output_schema`; repair once by `call(repair_turn)` if it is not
    valid. None when the run stopped during the repair call."""
    data, error = check(turn.output_schema, reply.response.text)
    if error is None:
        return Shaped(reply, data)
    conversation = [*turn.conversation, ChatMessage(role="assistant", content=reply.response.text or ""),
                    ChatMessage(role="user", content=REPAIR_PROMPT.format(error=error))]
    second = await call(replace(turn, conversation=conversation))
    if second is None:
        return None
    if second.response.tool_calls or second.response.truncated:  # not an answer: the run goes on as usual
        return Shaped(second, first=reply, first_error=error)
    data, again = check(turn.output_schema, second.response.text)
    return Shaped(second, data, again, first=reply, first_error=error)
