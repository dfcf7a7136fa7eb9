"""Directory import speed and peak memory on full-size files.

Builds full-size files from the real small extracts in tests/identify/fixtures (a FedACH
directory of 18,000 records from fedach_real_extract.txt, a Razorpay IFSC.csv of 185,000
rows from ifsc_razorpay_sample.csv: the real rows repeated with new, valid codes), then runs
`heddle identify import` on each in a fresh process against a fresh SQLite file and reports
wall time, CPU time (steadier than wall time on a shared machine; process start-up
included) and the process's peak resident memory. Targets (issue 14): FedACH < 5 s, IFSC
< 30 s, peak memory < 200 MB. Timings on a shared machine are noisy: compare runs.

    python bench/identify_import.py [--fedach-rows 18000] [--ifsc-rows 185000] [--xlsx]
Prints one line per file, then one JSON line: {"benchmark": "identify_import", ...}.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stdnum.us import rtn

FIXTURES = Path(__file__).parents[1] / "tests" / "identify" / "fixtures"


def fedach_file(rows: int) -> bytes:
    """`rows` FedACH records: the real extract's records with new routing numbers (the same
    Federal Reserve routing symbol, a 6-digit serial, the right check digit)."""
    real = [line for line in (FIXTURES / "fedach_real_extract.txt").read_text().splitlines() if line]
    out = []
    for n in range(rows):
        line = real[n % len(real)]
        body = line[:2] + f"{n:06d}"
        routing = body + rtn.calc_check_digit(body)
        out.append(routing + line[9:19] + "1" + line[20:26] + "000000000" + line[35:])
    return ("\r\n".join(out) + "\r\n").encode("ascii")


def ifsc_file(rows: int) -> bytes:
    real = list(csv.reader(io.StringIO((FIXTURES / "ifsc_razorpay_sample.csv").read_text())))
    header, body = real[0], real[1:]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for n in range(rows):
        row = list(body[n % len(body)])
        row[1] = row[1][:4] + "0" + f"{n:06d}"
        writer.writerow(row)
    return out.getvalue().encode("utf-8")


def ifsc_xlsx_file(rows: int, path: Path) -> None:
    """The RBI's XLSX layout: the real RBI-layout rows repeated with new codes."""
    from openpyxl import Workbook

    real = list(csv.reader(io.StringIO((FIXTURES / "ifsc_rbi_sample.csv").read_text())))
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet()
    sheet.append(real[0])
    for n in range(rows):
        row = list(real[1 + n % (len(real) - 1)])
        row[1] = row[1][:4] + "0" + f"{n:06d}"
        sheet.append(row)
    workbook.save(path)


# Runs the CLI and reports its own peak RSS on stderr (RUSAGE_CHILDREN would give the
# largest of all children so far, not this import's).
_WRAPPER = """
import resource, sys
from heddle.cli.main import main
sys.argv = ["heddle", *sys.argv[1:]]
try:
    main()
finally:
    print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def run_import(path: Path, fmt: str, db_url: str) -> dict:
    """One `heddle identify import` in its own process: wall time, CPU time, peak RSS."""
    # Migrations run first, outside the measured import.
    subprocess.run([sys.executable, "-m", "heddle", "migrate", "--database-url", db_url],
                   check=False, capture_output=True)
    started = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = usage.ru_utime + usage.ru_stime
    done = subprocess.run([sys.executable, "-c", _WRAPPER, "identify", "import", str(path),
                           "--format", fmt, "--database-url", db_url, "--json"],
                          capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    peak_kb = int(done.stderr.rsplit("PEAK_KB", 1)[1].split()[0])
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {"format": fmt, "rows": report["rows"], "bad_rows": report["bad_rows"],
            "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "peak_mb": round(peak_kb / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fedach-rows", type=int, default=18_000)
    parser.add_argument("--ifsc-rows", type=int, default=185_000)
    parser.add_argument("--xlsx", action="store_true",
                        help="also import the IFSC rows as the RBI's XLSX (slow to build)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, fmt, data in (("FedACHdir.txt", "fedach", fedach_file(args.fedach_rows)),
                                ("IFSC.csv", "ifsc-csv", ifsc_file(args.ifsc_rows))):
            path = folder / name
            path.write_bytes(data)
            result = run_import(path, fmt, f"sqlite+aiosqlite:///{folder / (fmt + '.db')}")
            results.append(result)
            print(f"{fmt:<10}{result['rows']:>8} rows  {result['seconds']:>7.2f} s wall  "
                  f"{result['cpu_seconds']:>7.2f} s CPU  peak {result['peak_mb']:>6.1f} MB")
        if args.xlsx:
            path = folder / "68774.xlsx"
            ifsc_xlsx_file(args.ifsc_rows, path)
            result = run_import(path, "ifsc-xlsx", f"sqlite+aiosqlite:///{folder / 'xlsx.db'}")
            results.append(result)
            print(f"{'ifsc-xlsx':<10}{result['rows']:>8} rows  {result['seconds']:>7.2f} s wall  "
                  f"{result['cpu_seconds']:>7.2f} s CPU  peak {result['peak_mb']:>6.1f} MB")
    print(json.dumps({"benchmark": "identify_import", "imports": results}))


if __name__ == "__main__":
    main()
