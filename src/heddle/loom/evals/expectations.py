"""What a case's conversation did, and each expectation checked against it (pure: no I/O).

Texts are matched against every answer of the case (the assistant's messages, joined by new
lines), case-sensitively; tool names against every tool call of the case's runs; `state` is the
last run's state; `max_credits` bounds the credits of all the case's runs; `judge` passes when
its score reaches `min_score` (the verdict comes from heddle/loom/evals/judge.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from heddle.loom.evals.dataset import Case


@dataclass
class Outcome:
    """A case's conversation as it ended."""

    last_state: str | None = None  # the last run's state (None: no run started)
    answers: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)  # every tool call's name, in order
    credits: float = 0.0
    run_ids: list[str] = field(default_factory=list)
    error: str | None = None  # the last run's error code, or why the case could not go on
    latency_ms: float = 0.0
    judge: dict[str, Any] | None = None  # {"score", "reason"} or {"error"}

    @property
    def text(self) -> str:
        return "\n".join(self.answers)


def _result(expectation: str, passed: bool, detail: str) -> dict[str, Any]:
    return {"expectation": expectation, "passed": passed, "detail": detail}


def check(case: Case, outcome: Outcome) -> list[dict[str, Any]]:
    """One result per expectation of the case (`expectation`, `passed`, `detail`)."""
    results = []
    text = outcome.text
    for key, value in case.expect.items():
        if key == "contains":
            missing = [t for t in value if t not in text]
            results.append(_result(key, not missing, f"missing {missing!r}" if missing else "found"))
        elif key == "not_contains":
            found = [t for t in value if t in text]
            results.append(_result(key, not found, f"found {found!r}" if found else "absent"))
        elif key == "regex":
            unmatched = [p for p in value if re.search(p, text) is None]
            results.append(_result(key, not unmatched, f"no match for {unmatched!r}" if unmatched else "matched"))
        elif key == "tool_called":
            missing = [t for t in value if t not in outcome.tools]
            results.append(_result(key, not missing, f"not called: {missing!r} (called {outcome.tools!r})"
                                   if missing else "called"))
        elif key == "not_tool_called":
            called = [t for t in value if t in outcome.tools]
            results.append(_result(key, not called, f"called: {called!r}" if called else "not called"))
        elif key == "state":
            results.append(_result(key, outcome.last_state == value, f"ended {outcome.last_state}"
                                   + (f" ({outcome.error})" if outcome.error else "")))
        elif key == "max_credits":
            results.append(_result(key, outcome.credits <= value + 1e-9, f"{outcome.credits:g} of at most {value:g}"))
        elif key == "judge":
            verdict = outcome.judge or {"error": "not judged"}
            if "error" in verdict:
                results.append({**_result(key, False, f"judge failed: {verdict['error']}"), "score": None,
                                "reason": None})
            else:
                passed = verdict["score"] >= value.min_score
                results.append({**_result(key, passed, f"score {verdict['score']:g} (pass at {value.min_score:g}): "
                                          f"{verdict['reason']}"),
                                "score": verdict["score"], "reason": verdict["reason"]})
    return results
