"""Consecutive deltas stored as one row (loom/event_log.py, runs_vocabulary.pack): packing and
unpacking agree, and the realtime bus unpacks a stored row the same way."""

from __future__ import annotations

import json
import uuid

from hypothesis import given
from hypothesis import strategies as st

from heddle.loom.event_log import _rows, unpack_row
from heddle.loom.run_event import RunEvent
from heddle.realtime.bus import decode_events
from heddle.runs_vocabulary import DELTA_EVENT as DELTA
from heddle.runs_vocabulary import PACKED_DELTAS

EVENTS = st.lists(st.sampled_from(["run.updated", "message.created", DELTA]), max_size=40)
RUN = uuid.uuid4()


def _events(names: list[str]) -> list[RunEvent]:
    return [RunEvent(name, {"n": i}, None, RUN) for i, name in enumerate(names)]


@given(EVENTS, st.integers(min_value=1, max_value=1000))
def test_unpacking_the_rows_gives_back_every_event_with_its_seq(names, first):
    events = _events(names)
    rows = _rows(events, first)
    unpacked = [event for row in rows for event in unpack_row(RUN, *row)]
    assert unpacked == [event.at(first + i) for i, event in enumerate(events)]
    # Each row's seq is its last event's: max(seq) stays the run's last event.
    assert [seq for seq, _, _ in rows] == sorted({seq for seq, _, _ in rows})
    if rows:
        assert rows[-1][0] == first + len(events) - 1


def test_a_run_of_deltas_is_one_row_and_a_lone_delta_stays_as_it_was():
    events = [RunEvent(name, data, None, RUN) for name, data in [
        ("run.updated", {}), (DELTA, {"seq": 0}), (DELTA, {"seq": 1}), (DELTA, {"seq": 2}),
        ("message.created", {}), (DELTA, {"seq": 0})]]
    assert _rows(events, 5) == [(5, "run.updated", {}), (8, PACKED_DELTAS, [{"seq": 0}, {"seq": 1}, {"seq": 2}]),
                                (9, "message.created", {}), (10, DELTA, {"seq": 0})]


def test_the_bus_unpacks_a_stored_row_into_its_pieces():
    pieces = [{"seq": 0, "delta": "a"}, {"seq": 1, "delta": "b"}]
    (row,) = [r for r in _rows([RunEvent(DELTA, p, None, RUN) for p in pieces], 1)]
    # As migration 0010's trigger sends a stored row on the PostgreSQL bus.
    message = json.dumps({"c": "private-thread-x", "e": row[1], "d": row[2]})
    assert decode_events(message) == [
        ("private-thread-x", DELTA, piece) for piece in pieces]
