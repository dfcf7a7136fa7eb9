"""The `judge` expectation: a rubric scored by a model class the operator names.

The judge model is given the rubric and the case's conversation, and asked for one JSON object
`{"score": <0..1>, "reason": "..."}`; the score and the reason go into the case's result. A class
the server does not configure is refused before any case runs (`unknown_judges`). A judge's
call is the operator's own cost: it is not charged to the workspace, and not a run.
"""

from __future__ import annotations

import json
import re

from heddle.loom.evals.dataset import Case
from heddle.loom.evals.expectations import Outcome
from heddle.loom.providers.base import ChatMessage, ModelProviderError
from heddle.loom.providers.registry import ModelRegistry

SYSTEM = ("You grade an AI agent's conversation against a rubric. Reply with one JSON object and nothing "
          'else: {"score": <a number from 0 (fails the rubric) to 1 (meets it fully)>, "reason": "<one sentence>"}.')
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def unknown_judges(registry: ModelRegistry, classes: set[str]) -> list[str]:
    """The judge model classes this server does not configure."""
    return sorted(name for name in classes if name not in registry)


def prompt(case: Case, outcome: Outcome, rubric: str) -> list[ChatMessage]:
    lines = []
    for number, message in enumerate(case.messages):
        lines.append(f"User: {message}")
        if number < len(outcome.answers):
            lines.append(f"Assistant: {outcome.answers[number]}")
    lines += [f"Assistant: {a}" for a in outcome.answers[len(case.messages):]]
    return [ChatMessage("system", SYSTEM),
            ChatMessage("user", f"Rubric: {rubric}\n\nConversation:\n" + "\n".join(lines))]


def verdict(text: str | None) -> dict:
    """`{"score", "reason"}` from the judge's reply, or `{"error"}` saying why it is unusable."""
    match = _OBJECT.search(text or "")
    if match is None:
        return {"error": f"the judge did not answer with a JSON object: {(text or '')[:200]!r}"}
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return {"error": f"the judge's JSON does not parse: {match.group(0)[:200]!r}"}
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        return {"error": f"the judge's score is not a number from 0 to 1: {score!r}"}
    return {"score": float(score), "reason": str(data.get("reason") or "")[:2000]}


def judge_with(registry: ModelRegistry):
    """The runner's judge call over this registry's providers."""

    async def judge(case: Case, outcome: Outcome) -> None:
        spec = case.expect["judge"]
        model_class = registry.get(spec.model_class)
        try:
            response = await registry.provider_for(model_class).complete(
                model_class, prompt(case, outcome, spec.rubric), [])
        except ModelProviderError as e:
            outcome.judge = {"error": f"model_error: {e}"}
            return
        outcome.judge = verdict(response.text)

    return judge
