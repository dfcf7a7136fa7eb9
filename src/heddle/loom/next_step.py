"""What a run does next, decided from what the database holds: a pure function, no I/O.

The engine (heddle/loom/engine.py) reads a run and its tool calls, asks `next_step`, and does
what it says in a transaction of its own; so the rules of a run's progress can be read (and
tested) apart from the loop that carries them out, as LangGraph keeps `prepare_next_tasks`
apart from its runner.

In order: a run past its time limit fails; pending calls (not `ask`) are carried out; a call
awaiting approval pauses the run until a person answers; a call awaiting its outcome pauses it
until the caller confirms; a pending `ask` asks the user; else the model takes a turn, unless
the run used all of its turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from heddle.loom.models import ToolCall
from heddle.loom.states import CALL_AWAITING_APPROVAL, CALL_AWAITING_OUTCOME, CALL_PENDING, RunFailure

Kind = Literal["tools", "await_approval", "await_outcome", "ask", "model_turn", "fail"]


@dataclass(frozen=True)
class NextStep:
    kind: Kind
    calls: tuple[ToolCall, ...] = field(default=())  # "tools": the pending calls, in call order; "ask": the one asked
    failure: RunFailure | None = None  # "fail": why


def next_step(calls: Sequence[ToolCall], *, turn_count: int, max_turns: int, past_deadline: bool,
              max_seconds: float) -> NextStep:
    """The next step of a running run with these tool calls (in `seq` order) and model turns."""
    if past_deadline:
        return NextStep("fail", failure=RunFailure("max_duration_exceeded",
                                                   f"The run took longer than {max_seconds:g} s."))
    pending = tuple(tc for tc in calls if tc.status == CALL_PENDING and tc.kind != "ask")
    if pending:
        return NextStep("tools", pending)
    if any(tc.status == CALL_AWAITING_APPROVAL for tc in calls):  # interaction: approve
        return NextStep("await_approval")
    if any(tc.status == CALL_AWAITING_OUTCOME for tc in calls):
        return NextStep("await_outcome")
    asked = [tc for tc in calls if tc.kind == "ask" and tc.status == CALL_PENDING]
    if asked:
        return NextStep("ask", (asked[0],))
    if turn_count >= max_turns:
        return NextStep("fail", failure=RunFailure("max_turns_exceeded",
                                                   f"The run used its {max_turns} model turns."))
    return NextStep("model_turn")
