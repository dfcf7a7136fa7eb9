"""bench/streaming.py's arrival shapes (`--arrivals`): together, every conversation's first
message leaves when the round opens; spread, the k-th of N leaves k/N of the spread later.
The figures of docs/operations.md, "Part twelve", rest on this; and the split of a round's
first token between each conversation's first message and the later ones ("Part thirteen")."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from streaming_load import _paired_ratios, _pct, by_message, medians_by_message  # noqa: E402
from streaming_systems import REPLY, Gate, Sample, _replies  # noqa: E402


async def _starts(conversations: int, spread: float) -> tuple[list[float], float, list[float]]:
    gate = Gate(conversations, duration=5.0, spread=spread)

    async def conversation() -> tuple[float, float]:
        deadline = await gate.wait()
        return time.monotonic() - gate.started, deadline

    results = await asyncio.gather(*(conversation() for _ in range(conversations)))
    return sorted(r[0] for r in results), gate.started, [r[1] for r in results]


def test_together_every_conversation_starts_at_the_opening():
    starts, opened, deadlines = asyncio.run(_starts(8, 0.0))
    assert max(starts) < 0.05
    assert set(deadlines) == {opened + 5.0}


def test_spread_starts_are_even_over_the_spread_and_share_one_deadline():
    starts, opened, deadlines = asyncio.run(_starts(8, 0.8))
    expected = [k / 8 * 0.8 for k in range(8)]
    assert starts == [pytest.approx(e, abs=0.05) for e in expected]
    assert set(deadlines) == {opened + 5.0}


def test_only_a_conversations_first_message_of_the_round_is_its_opening():
    async def reply():
        await asyncio.sleep(0.01)
        yield REPLY

    async def round_() -> list[Sample]:
        out: list[Sample] = []
        gate = Gate(2, duration=0.2)
        await asyncio.gather(_replies(gate, out, reply), _replies(gate, out, reply))
        return out

    out = asyncio.run(round_())
    assert len(out) > 4 and not any(s.failed for s in out)
    assert sum(s.opening for s in out) == 2  # one a conversation, the first it sent
    assert all(s.ttft_ms is not None for s in out)
    # Each conversation numbers its messages 0, 1, 2, ... in the order it sent them.
    counts = [sum(1 for s in out if s.index == n) for n in range(max(s.index for s in out) + 1)]
    assert counts[0] == 2 and all(c >= 1 for c in counts) and counts == sorted(counts, reverse=True)


def test_first_tokens_are_grouped_by_message_of_the_round_and_pooled_over_rounds():
    samples = [Sample(800.0, None, 150, None, 0), Sample(820.0, None, 150, None, 0),
               Sample(500.0, None, 150, None, 1), Sample(None, None, 0, "incomplete", 1),
               Sample(400.0, None, 150, None, 2)]
    grouped = by_message(samples)
    assert grouped == [[800.0, 820.0], [500.0], [400.0]]  # a message without a first token has none
    rounds = [{"ttft_by_message_ms": grouped}, {"ttft_by_message_ms": [[900.0], [520.0, 540.0]]}]
    assert medians_by_message(rounds) == [820.0, 520.0, 400.0]


def test_later_messages_are_compared_round_by_round():
    # Three conversations' first messages slow, two later ones quick: the round's median is an
    # opening's, the later messages' is not.
    rows = [{"ttft_ms": [900, 900, 900, 450, 450], "ttft_later_ms": [450, 450]}]
    direct = [{"ttft_ms": [400, 400, 400, 300, 300], "ttft_later_ms": [300, 300]}]
    assert _paired_ratios(rows, direct) == [2.25]
    assert _paired_ratios(rows, direct, "ttft_later_ms") == [1.5]
    assert _pct(rows[0]["ttft_later_ms"], 50) == 450
