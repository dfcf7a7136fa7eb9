"""The subscribers benchmark runs end to end at a small size and reports sane numbers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "realtime_subscribers.py"


def _load():
    spec = importlib.util.spec_from_file_location("heddle_bench_realtime_subscribers", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_bench_holds_every_subscriber_and_measures_latency():
    result = await _load().run(50, 30)
    assert result["subscribers_held"] == result["channels_subscribed"] == 50
    assert result["connect_failures"] == {}
    latency = result["publish_to_receive"]
    assert latency["n"] == 30 and 0 < latency["median_ms"] <= latency["p99_ms"]
    assert result["rss_mb_after"] > 0


async def test_bench_refuses_empty_runs():
    with pytest.raises(ValueError):
        await _load().run(0, 10)
