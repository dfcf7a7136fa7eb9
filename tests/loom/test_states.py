"""The transition table: every allowed transition and every refused one."""

from __future__ import annotations

import itertools

import pytest

from heddle.loom.states import STATES, TERMINAL, TRANSITIONS, InvalidTransition, next_state

EVENTS = sorted({event for _, event in TRANSITIONS})


@pytest.mark.parametrize(("state", "event"), sorted(TRANSITIONS))
def test_allowed(state, event):
    assert next_state(state, event) == TRANSITIONS[(state, event)]


@pytest.mark.parametrize(("state", "event"), [
    pair for pair in itertools.product(STATES, EVENTS) if pair not in TRANSITIONS
])
def test_refused(state, event):
    with pytest.raises(InvalidTransition) as info:
        next_state(state, event)
    assert info.value.code == "invalid_state_transition" and info.value.status == 409


def test_terminal_states_have_no_way_out():
    assert not [pair for pair in TRANSITIONS if pair[0] in TERMINAL]


def test_every_state_is_reachable_from_an_entry_state():
    # A run is created `running`, or `queued` behind a busy run (if_busy: enqueue).
    reached, frontier = {"running", "queued"}, ["running", "queued"]
    while frontier:
        state = frontier.pop()
        for (src, _), dst in TRANSITIONS.items():
            if src == state and dst not in reached:
                reached.add(dst)
                frontier.append(dst)
    assert reached == set(STATES)
