"""heddle/runs_vocabulary.py names what loom's tables and events name, and nothing else.

loom/states.py takes the state and status names from the vocabulary; this proves nothing
redefines them and that the transition tables move only between named states.
"""

from __future__ import annotations

from heddle import runs_vocabulary as vocabulary
from heddle.loom import deltas, run_events, states


def test_run_states_and_call_statuses_are_the_tables_own():
    assert vocabulary.STATES == states.STATES
    assert set(vocabulary.TERMINAL) == states.TERMINAL
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
    assert vocabulary.PACKED_DELTAS == run_events.PACKED_DELTAS
    assert vocabulary.DELTA_EVENT in run_events.STORED_EVENTS
