"""The direct-mode verification benchmark runs and reports sane numbers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "direct_verify.py"


def _load():
    spec = importlib.util.spec_from_file_location("heddle_bench_direct_verify", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_bench_reports_median_and_p99_for_es256_and_rs256():
    result = _load().bench(50)
    assert set(result["results"]) == {"ES256", "RS256"}
    for numbers in result["results"].values():
        assert numbers["n"] == 50
        assert 0 < numbers["min_us"] <= numbers["median_us"] <= numbers["p99_us"]
        # Not a timing assertion (CI machines vary), only a guard against a warm path that
        # fetched or parsed keys per token, which costs milliseconds.
        assert numbers["median_us"] < 5000
