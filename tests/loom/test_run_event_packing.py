"""Consecutive deltas stored as one row (loom/run_events.py): packing and unpacking agree."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from heddle.loom.deltas import DELTA_EVENT as DELTA
from heddle.loom.run_events import PACKED_DELTAS, _packed, unpack

EVENTS = st.lists(st.sampled_from(["run.updated", "message.created", DELTA]), max_size=40)


@given(EVENTS, st.integers(min_value=1, max_value=1000))
def test_unpacking_the_rows_gives_back_every_event_with_its_seq(names, first):
    events = [(name, {"n": i}) for i, name in enumerate(names)]
    rows = _packed(events, first)
    unpacked = [event for row in rows for event in unpack(*row)]
    assert unpacked == [(first + i, name, data) for i, (name, data) in enumerate(events)]
    # Each row's seq is its last event's: max(seq) stays the run's last event.
    assert [seq for seq, _, _ in rows] == sorted({seq for seq, _, _ in rows})
    if rows:
        assert rows[-1][0] == first + len(events) - 1


def test_a_run_of_deltas_is_one_row_and_a_lone_delta_stays_as_it_was():
    events = [("run.updated", {}), (DELTA, {"seq": 0}), (DELTA, {"seq": 1}), (DELTA, {"seq": 2}),
              ("message.created", {}), (DELTA, {"seq": 0})]
    assert _packed(events, 5) == [(5, "run.updated", {}), (8, PACKED_DELTAS, [{"seq": 0}, {"seq": 1}, {"seq": 2}]),
                                  (9, "message.created", {}), (10, DELTA, {"seq": 0})]
