"""bench/streaming.py's arrival shapes (`--arrivals`): together, every conversation's first
message leaves when the round opens; spread, the k-th of N leaves k/N of the spread later.
The figures of docs/operations.md, "Part twelve", rest on this."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from streaming_systems import Gate  # noqa: E402


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
