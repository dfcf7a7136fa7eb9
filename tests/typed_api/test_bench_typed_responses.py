"""bench/typed_responses.py keeps working: its sample Run and Trace still validate against the
models (it broke once when run control added fields) and give the same JSON both ways."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "typed_responses.py"


def test_bench_runs_and_reports_both_bodies():
    out = subprocess.run([sys.executable, str(BENCH), "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert [r["body"] for r in result["results"]] == ["run", "trace"]
    assert all(r["dict_json_us"] > 0 and r["typed_us"] > 0 for r in result["results"])
