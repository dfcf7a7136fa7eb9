"""The lookup benchmark runs and reports every rail."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "identify_lookup.py"


def test_bench_lookups_reports_every_rail():
    spec = importlib.util.spec_from_file_location("identify_lookup_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.bench_lookups(0.02)
    assert set(results) == {"swift", "iban", "routing_number", "sort_code", "ifsc", "nuban",
                            "momo", "gh_bank", "detect"}
    assert all(rate > 100 for rate in results.values()), results


def test_bench_script_prints_a_json_line():
    out = subprocess.run([sys.executable, str(BENCH), "--seconds", "0.01", "--samples", "50"],
                         capture_output=True,
                         text=True, check=True, timeout=120).stdout.strip().splitlines()
    report = json.loads(out[-1])
    assert report["benchmark"] == "identify_lookup" and len(report["lookups_per_second"]) == 9
    assert set(report["latency_us"]) == set(report["lookups_per_second"])
    assert all(v["p99"] >= v["p50"] > 0 for v in report["latency_us"].values())
    memory = report["memory_mb"]
    assert memory["after_first_lookups"] >= memory["baseline"] > memory["interpreter"] > 0
    # Counts, not timings: the shipped data stays within the 15 MB wheel budget.
    assert 0 < report["data_bytes"]["in_wheel"] < report["data_bytes"]["raw"] < 15_000_000


def test_import_bench_runs_on_small_files():
    script = Path(__file__).parents[2] / "bench" / "identify_import.py"
    out = subprocess.run([sys.executable, str(script), "--fedach-rows", "40", "--ifsc-rows", "40",
                          "--gleif-rows", "400", "--ifsc-codes", "2000", "--xlsx"], capture_output=True, text=True, check=True, timeout=300).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert report["benchmark"] == "identify_import"
    assert [(r["format"], r["rows"], r["bad_rows"]) for r in report["imports"]] == [
        ("fedach", 40, 0), ("ifsc-csv", 40, 0), ("ifsc-xlsx", 40, 0)]
    assert all(r["peak_mb"] > 0 and r["cpu_seconds"] > 0 for r in report["imports"])
    assert [(b["build"], b["rows"]) for b in report["builds"]] == [("gleif", 400),
                                                                   ("ifsc_list", 2000)]
    readers = report["xlsx_readers"]
    # Both readers see the header and the 40 rows; the ratio is printed, never asserted.
    assert readers["openpyxl"]["rows"] == readers["heddle"]["rows"] == 41
    assert readers["cpu_ratio"] > 0
