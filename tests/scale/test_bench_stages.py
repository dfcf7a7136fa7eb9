"""bench/streaming_stages.py and the clock it runs the server under (bench/stage_clock.py):
every name the clock wraps is still there, and the stages are read off its rows as
docs/operations.md, "Part thirteen", reports them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import stage_clock  # noqa: E402
from streaming_stages import openings, runs_of, stages  # noqa: E402


def test_every_wrapped_name_is_where_the_clock_looks():
    assert stage_clock.missing() == []


def _message(run: str, at: float) -> list[list]:
    """One message's rows as the clock writes them, `at` its POST's arrival (seconds)."""
    return [["posted", run, at, at + 0.002], ["started", run, at + 0.030], ["connection", run, at + 0.031, at + 0.1],
            ["body", run, at + 0.101], ["headers", run, at + 0.140], ["model", run, at + 0.031, at + 0.45],
            ["stream", run, at + 0.060]]


def test_stages_are_read_per_run_and_split_at_each_conversations_first_message():
    # Two conversations: their first messages at 10.0 and 10.01, then one more each.
    rows = [["posted", "warm", 1.0, 1.1]] + _message("a1", 10.0) + _message("b1", 10.01)
    rows += _message("a2", 14.0) + _message("b2", 14.02)
    rows += [["headers", "a2", 20.0]]  # a retried call's second headers: the first is the stage's
    runs, connects = runs_of(rows, since=5.0)
    assert set(runs) == {"a1", "b1", "a2", "b2"}  # the warm-up's rows are left out
    assert connects == [pytest.approx(69.0)] * 4
    assert openings(runs, 2) == {"a1", "b1"}
    measured = stages(list(runs.values()))
    assert measured["POST arrival -> 202 sent"]["median"] == pytest.approx(2.0)
    assert measured["202 sent -> run task starts"]["median"] == pytest.approx(28.0)
    assert measured["SDK call -> body written"]["median"] == pytest.approx(70.0)
    assert measured["body written -> headers"]["median"] == pytest.approx(39.0)
    assert measured["POST arrival -> first piece"] == {"median": pytest.approx(450.0), "p90": pytest.approx(450.0),
                                                       "n": 4}


def test_a_run_without_a_first_piece_has_no_stage_that_ends_there():
    rows = [["posted", "r", 1.0, 1.01], ["started", "r", 1.02], ["model", "r", 1.03, None]]
    measured = stages(list(runs_of(rows)[0].values()))
    assert measured["headers -> first piece"]["n"] == 0
    assert measured["run task -> SDK call"]["median"] == pytest.approx(10.0)
