"""What a model turn leaves in the trace, and the rule for a reply cut off at max_tokens.

Every model call is one `turns` row, whatever its fate (docs/run-control.md, "Model turns"):

- `ok`: an answer or tool calls;
- `truncated`: the reply stopped at the model class's `max_tokens` (`ModelResponse.truncated`).
  With text and no tool call dropped it is an answer like any other (the run closes with that
  text); when the provider dropped tool calls cut off mid-arguments, or nothing but a cut-off
  was received, the reply cannot be acted on and the run fails `model_error`;
- `failed`: no usable reply after the provider's retries (`ModelProviderError`); the run fails
  `model_error`, and the turn keeps every attempt so the trace says why.

Each turn carries `attempts` (`ModelAttempt.as_dict()`: outcome, error code, HTTP status,
duration, the server's Retry-After and the pause actually taken).
"""

from __future__ import annotations

import uuid
from typing import Any

from heddle.db.base import utcnow
from heddle.loom.attachments.to_model import stored_request
from heddle.loom.providers.base import ModelClass, ModelProviderError, ModelResponse

TURN_OK = "ok"
TURN_TRUNCATED = "truncated"
TURN_FAILED = "failed"


def turn_status(response: ModelResponse) -> str:
    return TURN_TRUNCATED if response.truncated else TURN_OK


def truncation_failure(response: ModelResponse, model_class: ModelClass) -> str | None:
    """Why a truncated reply cannot end its turn (the run's `model_error` message), or None."""
    if not response.truncated:
        return None
    dropped = response.response.get("heddle_dropped_tool_calls") or 0
    if dropped:
        what = f"its {dropped} tool call(s) were dropped" if dropped != 1 else "its tool call was dropped"
    elif not (response.text or "").strip():
        what = "it holds no text"
    else:
        return None  # text received: an answer, marked truncated in the trace
    return (f"The model's reply was cut off at max_tokens ({model_class.max_tokens}) and {what}; "
            f"raise max_tokens of model class {model_class.name!r}.")


def failure_message(exc: ModelProviderError) -> str:
    """The run's error message for a model call that failed: the provider's message (which
    names the last failure and the number of attempts) and the last attempt's error code."""
    message = str(exc)
    if exc.code and exc.code not in message:
        message = f"{message} (last attempt: {exc.code})"
    return message


def attempts_of(attempts) -> list[dict[str, Any]]:
    return [attempt.as_dict() for attempt in attempts]


def turn_row(run_id: uuid.UUID, turn_id: uuid.UUID, seq: int, turn: Any, reply: Any, cost: int,
             extra: dict[str, Any]) -> dict[str, Any]:
    """The `turns` row of a model turn that answered (engine.Turn, engine.Reply); `extra` goes
    into its stored response (a structured reply's `output_error`)."""
    response = reply.response
    return {"id": turn_id, "run_id": run_id, "seq": seq, "model_class": turn.model_class.name,
            "input_tokens": response.input_tokens, "output_tokens": response.output_tokens, "cost_micro": cost,
            "request": {**stored_request(response.request, turn.conversation), "history": turn.history,
                        **turn.toolset.trace()},
            "response": {**response.response, "text": response.text, **extra,
                         **({"nul_replaced": reply.nul_replaced} if reply.nul_replaced else {})},
            "latency_ms": reply.latency_ms, "created_at": utcnow(),
            "status": turn_status(response), "attempts": attempts_of(response.attempts)}


def failed_turn_row(run_id: uuid.UUID, seq: int, model_class: ModelClass, exc: ModelProviderError,
                    history: dict[str, Any], latency_ms: float) -> dict[str, Any]:
    """The `turns` row of a model call that gave no usable reply: nothing billed, every attempt kept."""
    return {
        "id": uuid.uuid4(), "run_id": run_id, "seq": seq, "model_class": model_class.name,
        "input_tokens": 0, "output_tokens": 0, "cost_micro": 0,
        "request": {"model": model_class.model, "history": history},
        "response": {"error": {"code": exc.code or "model_error", "message": str(exc)[:2000]}},
        "latency_ms": latency_ms, "status": TURN_FAILED, "attempts": attempts_of(exc.attempts),
        "created_at": utcnow(),
    }
