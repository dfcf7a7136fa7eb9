"""heddle/runs_vocabulary.py names what loom's tables and events name, and nothing else.

loom takes the state, status and event names from the vocabulary; this proves no loom module
defines one of them again (by name or by value) and that the transition tables move only
between named states.
"""

from __future__ import annotations

import ast
from pathlib import Path

from heddle import runs_vocabulary as vocabulary
from heddle.loom import deltas, states

LOOM = Path(__file__).resolve().parents[2] / "src" / "heddle" / "loom"


def test_run_states_and_call_statuses_are_the_tables_own():
    assert vocabulary.STATES == states.STATES
    assert vocabulary.TERMINAL == states.TERMINAL
    assert vocabulary.CALL_STATUSES == states.CALL_STATUSES
    # Every state a transition reaches or leaves is a named one.
    moves = {s for (frm, _), to in states.TRANSITIONS.items() for s in (frm, to)}
    assert moves <= set(vocabulary.STATES)
    assert {s for (frm, _), to in states.CALL_TRANSITIONS.items() for s in (frm, to)} <= set(vocabulary.CALL_STATUSES)


def test_settled_is_terminal_or_waiting_for_someone():
    assert set(vocabulary.SETTLED) == set(vocabulary.TERMINAL) | {vocabulary.AWAITING_INPUT,
                                                                   vocabulary.AWAITING_OUTCOME}


def test_delta_event_names_are_the_event_logs_own():
    assert vocabulary.DELTA_EVENT == deltas.DELTA_EVENT
    assert vocabulary.pack([{"seq": 0}]) == (vocabulary.DELTA_EVENT, {"seq": 0})
    assert vocabulary.pack([{"seq": 0}, {"seq": 1}])[0] == vocabulary.PACKED_DELTAS
    assert vocabulary.DELTA_EVENT in vocabulary.RUN_EVENTS


def _names() -> dict[str, object]:
    return {name: value for name, value in vars(vocabulary).items()
            if name.isupper() and isinstance(value, str | tuple)}


def redefinitions(source: Path) -> list[str]:
    """Module-level assignments under `source` of a vocabulary name, or of an event name written
    out again under another name (a state's word may mean something else elsewhere: a turn
    `failed` too)."""
    names = _names()
    values = {value for value in names.values() if isinstance(value, str) and "." in value}
    found = []
    for path in sorted(source.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.Assign | ast.AnnAssign):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                value = node.value
                literal = value.value if isinstance(value, ast.Constant) else None
                if target.id in names or (isinstance(literal, str) and literal in values):
                    found.append(f"{path.name}:{node.lineno} {target.id}")
    return found


def test_loom_defines_no_name_of_the_vocabulary_again():
    assert redefinitions(LOOM) == []


def test_the_check_fails_on_a_name_defined_again(tmp_path):
    (tmp_path / "deltas.py").write_text('DELTA_EVENT = "message.delta"\n')
    (tmp_path / "states.py").write_text('CLOSED = "closed"\nUPDATED = "run.updated"\n')
    assert redefinitions(tmp_path) == ["deltas.py:1 DELTA_EVENT", "states.py:1 CLOSED", "states.py:2 UPDATED"]
