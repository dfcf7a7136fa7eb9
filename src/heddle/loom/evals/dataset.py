"""An eval dataset: a JSONL file, one case a line:

    {"name": "routing", "messages": ["Where does 021000021 go?"], "expect": {"tool_called": "identify"}}

The whole file is read and checked before anything runs: a line that is not a JSON object,
has no messages, names an unknown expectation or gives one a value of the wrong kind refuses
the file with one line, `<file>:<line>: <what>` (`DatasetError`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from heddle.runs_vocabulary import STATES

EXPECTATIONS = ("contains", "not_contains", "regex", "tool_called", "not_tool_called", "state", "max_credits",
                "judge")
# Kept for the operator, never checked: what `heddle feedback export` writes beside a case.
NOTES = ("answer", "feedback")
MAX_CASES = 10_000
MAX_MESSAGES = 50
MAX_MESSAGE_CHARS = 32_000  # a posted message's own cap


class DatasetError(ValueError):
    """A dataset the eval refuses, with the line that says why."""


@dataclass(frozen=True)
class Judge:
    rubric: str
    model_class: str
    min_score: float = 0.5


@dataclass(frozen=True)
class Case:
    name: str
    line: int
    messages: tuple[str, ...]
    expect: dict[str, Any] = field(default_factory=dict)  # texts and tool names as lists; judge a Judge


def _texts(value: Any, key: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) and i for i in items):
        raise ValueError(f"`{key}` must be a non-empty string or a list of them")
    return items


def _judge(value: Any) -> Judge:
    if not isinstance(value, dict):
        raise ValueError('`judge` must be an object {"rubric", "model_class", "min_score"?}')
    unknown = set(value) - {"rubric", "model_class", "min_score"}
    if unknown:
        raise ValueError(f"`judge` has unknown field(s) {', '.join(sorted(unknown))}")
    rubric, model_class = value.get("rubric"), value.get("model_class")
    if not isinstance(rubric, str) or not rubric.strip():
        raise ValueError("`judge.rubric` must be a non-empty string")
    if not isinstance(model_class, str) or not model_class:
        raise ValueError("`judge.model_class` must name a model class")
    min_score = value.get("min_score", 0.5)
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not 0 <= min_score <= 1:
        raise ValueError("`judge.min_score` must be a number from 0 to 1")
    return Judge(rubric, model_class, float(min_score))


def _expectation(key: str, value: Any) -> Any:
    if key in ("contains", "not_contains", "tool_called", "not_tool_called"):
        return _texts(value, key)
    if key == "regex":
        patterns = _texts(value, key)
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(f"`regex` {pattern!r} does not compile: {e}") from None
        return patterns
    if key == "state":
        if value not in STATES:
            raise ValueError(f"`state` must be one of {', '.join(STATES)}")
        return value
    if key == "max_credits":
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError("`max_credits` must be a number >= 0")
        return float(value)
    return _judge(value)


def parse_case(text: str, line: int) -> Case:
    """One line of the file as a Case; ValueError (without the line number) when it is bad."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("a case must be a JSON object")
    unknown = set(data) - {"name", "messages", "expect", *NOTES}
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))} (a case has name, messages, expect)")
    name = data.get("name", f"line {line}")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ValueError("`name` must be a non-empty string of at most 200 characters")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("`messages` must be a non-empty list of user messages")
    if len(messages) > MAX_MESSAGES:
        raise ValueError(f"at most {MAX_MESSAGES} messages a case")
    for message in messages:
        if not isinstance(message, str) or not message.strip() or len(message) > MAX_MESSAGE_CHARS:
            raise ValueError(f"each message must be a non-empty string of at most {MAX_MESSAGE_CHARS} characters")
        if "\x00" in message:
            raise ValueError("a message holds U+0000")
    expect = data.get("expect", {})
    if not isinstance(expect, dict):
        raise ValueError("`expect` must be an object")
    checked = {}
    for key, value in expect.items():
        if key not in EXPECTATIONS:
            raise ValueError(f"unknown expectation {key!r} (known: {', '.join(EXPECTATIONS)})")
        checked[key] = _expectation(key, value)
    return Case(name=name, line=line, messages=tuple(messages), expect=checked)


def parse(text: str, source: str = "dataset") -> list[Case]:
    """Every case of a JSONL text (blank lines skipped), or DatasetError naming the first bad line."""
    cases: list[Case] = []
    names: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            case = parse_case(line, number)
        except ValueError as e:
            raise DatasetError(f"{source}:{number}: {e}") from None
        if case.name in names:
            raise DatasetError(f"{source}:{number}: case name {case.name!r} is also on line {names[case.name]}")
        names[case.name] = number
        cases.append(case)
        if len(cases) > MAX_CASES:
            raise DatasetError(f"{source}:{number}: more than {MAX_CASES} cases")
    if not cases:
        raise DatasetError(f"{source}: no cases (one JSON object a line)")
    return cases


def load(path: str) -> list[Case]:
    """The cases of the file at `path`; DatasetError when it cannot be read or is bad."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot be read ({e})") from None
    return parse(text, path)


def judges(cases: list[Case]) -> set[str]:
    """The model classes the dataset's judges name."""
    return {case.expect["judge"].model_class for case in cases if "judge" in case.expect}
