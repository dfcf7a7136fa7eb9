"""What typed responses cost: building a response body the old way (`JSONResponse` of a dict)
against the typed way (validate against `Envelope[Model]`, then Pydantic's JSON serializer, as
FastAPI does for `response_model`), for a Run awaiting an outcome and a three-turn Trace; and
the event payload check (`payload(Run, ...)`). In-process CPU work, interleaved, best of 7.

    python bench/typed_responses.py [--json]
"""

from __future__ import annotations

import argparse
import json
import timeit

from fastapi.responses import JSONResponse
from pydantic import TypeAdapter

from heddle.api.envelope import Envelope
from heddle.loom.channels import payload
from heddle.loom.schemas import Run, Trace

T = "2026-01-01T12:00:00.123456Z"
CALL = {"id": "7c1d2e3f-1111-4a2b-9c3d-4e5f6a7b8c9d", "name": "transfer", "kind": "hosted", "patch_ref": "tr_1",
        "interaction": "confirm",
        "status": "awaiting_outcome", "args": {"amount": 5}, "result": {"patch_ref": "tr_1", "status": "pending"},
        "risk": "high", "reliability": "at_most_once", "cost_credits": 0.01, "outcome": None, "approval": None,
        "nul_replaced": 0}
RUN = {"id": "4b0d6c1e-6a53-4a53-9d0c-2f5a8f0e7c11", "thread_id": "0f8b7a52-2d7e-4c1e-8a5e-1f3b9c6d2a40",
       "state": "awaiting_outcome", "origin": "api", "terminal": False, "cost_credits": 0.25,
       "connection": {"id": "0f8b7a52-2d7e-4c1e-8a5e-1f3b9c6d2a41", "name": "bank"},
       "latest_message": None, "pending": {"type": "outcome", "tool_calls": [CALL]}, "error": None,
       "created_at": T, "updated_at": T}
# As the API answers it: the fields a successful attempt lacks are null.
ATTEMPT = {"attempt": 1, "outcome": "ok", "duration_ms": 812.5, "error_code": None, "error": None, "status": None,
           "retry_after": None, "waited_seconds": None}
TURN = {"seq": 1, "model_class": "scripted", "input_tokens": 12, "output_tokens": 30, "cost_credits": 0.02,
        "request": {"messages": [{"role": "user", "content": "hello " * 20}]}, "response": {"text": "hi " * 30},
        "status": "ok", "truncated": False, "attempts": [ATTEMPT], "purpose": "reply",
        "tool_calls": [CALL], "created_at": T}
TRACE = {**RUN, "opened_at": T, "closed_at": None, "turns": [TURN, TURN, TURN],
         "api_calls": [{"request_id": "r1", "method": "POST", "path": "/v1/identify", "status": 200,
                        "latency_ms": 1.5, "auth_mode": "relay", "created_at": T}] * 5, "api_calls_total": 5,
         "control": {"started_by": {"mode": "relay", "key_id": "key_1", "subject": "web:alice"}, "started_at": T}}


def old(data):
    return lambda: JSONResponse({"status": "success", "data": data}).body


def typed(model, data):
    adapter = TypeAdapter(Envelope[model])
    return lambda: adapter.dump_json(adapter.validate_python({"status": "success", "data": data}))


def best_us(*fns, number=2000, repeat=9) -> list[float]:
    """Best time per call of each function, the functions timed in turn (a loaded machine
    slows both alike)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], timeit.timeit(fn, number=number) / number * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for name, model, data in (("run", Run, RUN), ("trace", Trace, TRACE)):
        assert json.loads(old(data)()) == json.loads(typed(model, data)())  # same JSON
        o, t = best_us(old(data), typed(model, data))
        rows.append({"body": name, "dict_json_us": round(o, 1), "typed_us": round(t, 1), "ratio": round(t / o, 2)})
    [event] = best_us(lambda: payload(Run, RUN))
    result = {"benchmark": "typed_responses", "results": rows, "event_payload_check_us": round(event, 1)}
    if args.json:
        print(json.dumps(result))
        return
    for r in rows:
        print(f"{r['body']:>6}: dict+json.dumps {r['dict_json_us']:7.1f} us   typed {r['typed_us']:7.1f} us   "
              f"ratio {r['ratio']:.2f}")
    print(f"event payload check (Run): {event:.1f} us")


if __name__ == "__main__":
    main()
