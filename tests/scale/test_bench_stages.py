"""bench/streaming_stages.py and the clock it runs the server under (bench/stage_clock.py):
every name the clock wraps is still there, and the stages are read off its rows as
docs/operations.md, "Part thirteen", reports them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import stage_clock  # noqa: E402
from streaming_stages import (  # noqa: E402
    by_wave,
    client_stages,
    openings,
    runs_of,
    stages,
    stages_by_message,
    waves,
)
from streaming_systems import Sample  # noqa: E402


def test_every_wrapped_name_is_where_the_clock_looks():
    assert stage_clock.missing() == []


def _message(run: str, at: float) -> list[list]:
    """One message's rows as the clock writes them, `at` its POST's arrival (seconds): its head
    read 5 ms before, its first piece at +450 ms and that piece's SSE frame at +460 ms."""
    return [["posted", run, at, at + 0.002, at - 0.005], ["started", run, at + 0.030],
            ["connection", run, at + 0.031, at + 0.1], ["body", run, at + 0.101], ["headers", run, at + 0.140],
            ["model", run, at + 0.031, at + 0.45], ["stream", run, at + 0.060], ["sent", run, at + 0.46]]


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
    assert measured["POST read -> its task starts"]["median"] == pytest.approx(5.0)
    assert measured["first piece -> SSE frame"]["median"] == pytest.approx(10.0)
    assert measured["POST arrival -> SSE frame"]["median"] == pytest.approx(460.0)


def test_a_posted_row_without_its_head_time_counts_the_head_as_read_on_arrival():
    # Rows of a clock from before the head was timed: the stage is zero, not missing.
    runs, _ = runs_of([["posted", "r", 1.0, 1.01]])
    assert runs["r"]["read"] == 1.0 and runs["r"]["answered"] == 1.01


def test_waves_take_the_posts_in_arrival_order_and_say_how_spread_and_how_fast_each_was():
    # Two conversations: the first wave arrives 10 ms apart, the second 400 ms apart.
    rows = _message("a1", 10.0) + _message("b1", 10.01) + _message("a2", 14.0) + _message("b2", 14.4)
    runs, _ = runs_of(rows)
    assert waves(runs, 2) == [["a1", "b1"], ["a2", "b2"]]
    first, second = by_wave(runs, 2)
    assert first == {"posts": 2, "arrival_spread_ms": pytest.approx(10.0), "to_sse_frame_ms": pytest.approx(460.0)}
    assert second["arrival_spread_ms"] == pytest.approx(400.0)


def test_the_clients_share_is_joined_to_the_servers_rows_by_run():
    rows = _message("a1", 10.0) + _message("a2", 14.0)
    runs, _ = runs_of(rows)
    # The client sent each POST 3 ms before the server read its head, and read each first delta
    # 2 ms (then 6 ms) after the server made its frame; a failed message and one the server never
    # saw are left out.
    samples = [Sample(475.0, 4.0, 150, None, 0, "a1", 10.0 - 0.008, 10.462),
               Sample(480.0, 4.0, 150, None, 1, "a2", 14.0 - 0.008, 14.466),
               Sample(None, None, 0, "run failed", 2, "a2", 15.0, None),
               Sample(500.0, 4.0, 150, None, 2, "elsewhere", 16.0, 16.5)]
    share = client_stages(samples, runs)
    assert share["POST sent -> head read"]["median"] == pytest.approx(3.0)
    assert share["SSE frame -> client reads it"]["p90"] == pytest.approx(6.0)
    assert share["SSE frame -> client, by message"] == [pytest.approx(2.0), pytest.approx(6.0)]


def test_each_stage_is_read_by_message_of_the_round():
    rows = _message("a1", 10.0) + _message("b1", 10.01) + _message("a2", 14.0)
    rows += [["posted", "b2", 14.02, 14.3], ["started", "b2", 14.5]]  # b2's run task waited 200 ms
    runs, _ = runs_of(rows)
    # a2 is its conversation's 3rd message (its 2nd failed), b2 the other's 2nd
    samples = [Sample(470.0, 4.0, 150, None, 0, "a1"), Sample(470.0, 4.0, 150, None, 0, "b1"),
               Sample(None, None, 0, "run failed", 1, "gone"), Sample(900.0, 4.0, 150, None, 1, "b2"),
               Sample(470.0, 4.0, 150, None, 2, "a2"), Sample(None, None, 0, "run failed", 3, "a2")]
    first, second, third = stages_by_message(samples, runs)
    assert first["202 sent -> run task starts"] == pytest.approx(28.0)
    assert second["202 sent -> run task starts"] == pytest.approx(200.0)
    assert second["POST arrival -> SSE frame"] is None  # b2 never made one
    assert third["POST arrival -> SSE frame"] == pytest.approx(460.0)


def test_a_run_without_a_first_piece_has_no_stage_that_ends_there():
    rows = [["posted", "r", 1.0, 1.01], ["started", "r", 1.02], ["model", "r", 1.03, None]]
    measured = stages(list(runs_of(rows)[0].values()))
    assert measured["headers -> first piece"]["n"] == 0
    assert measured["run task -> SDK call"]["median"] == pytest.approx(10.0)
