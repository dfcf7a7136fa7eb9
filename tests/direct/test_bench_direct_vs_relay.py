"""The direct-vs-relay benchmark runs end to end against a real `heddle serve` and reports
each mode from the client and from the server's request log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts a server and migrates a database
BENCH = Path(__file__).resolve().parents[2] / "bench" / "direct_vs_relay.py"


def test_bench_reports_reused_and_fresh_tokens_against_relay():
    out = subprocess.run([sys.executable, str(BENCH), "--requests", "30", "--verify-tokens", "20", "--json"],
                         capture_output=True, text=True, check=True, timeout=180).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert report["benchmark"] == "direct_vs_relay" and report["alg"] == "ES256"
    for source in ("client", "server"):
        medians = report[source]["median_ms"]
        assert set(medians) == {"relay", "direct_reused_token", "direct_fresh_token"}
        assert all(v > 0 for v in medians.values())
        assert set(report[source]["added_ms"]) == {"direct_reused_token", "direct_fresh_token"}
    assert set(report["in_process_verify"]["results"]) == {"ES256", "RS256"}
