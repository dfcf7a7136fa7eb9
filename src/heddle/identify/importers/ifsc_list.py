"""Build `data/ifsc_branches.json.gz` (every IFSC in RBI's list) and read it memory-light.

razorpay/ifsc (MIT; its README: "The dataset itself is under public domain") compiles RBI's
NEFT/RTGS lists and NPCI's IMPS list into `src/IFSC.json`: bank code -> branch codes (digits as
numbers, others as strings). About 182,000 IFSCs: held as Python strings they would take some
20 MB, so each bank's branch codes are kept as one sorted bytes string of 6-character codes
and looked up by binary search (about 1.1 MB in all).

    npm pack ifsc@2.0.50 && tar xzf ifsc-2.0.50.tgz     # Razorpay's package carries src/IFSC.json
    python -m heddle.identify.importers.ifsc_list --ifsc-json package/src/IFSC.json --as-of 2026-08-24 \\
        --out src/heddle/identify/data/ifsc_branches.json.gz
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

_BRANCH = re.compile(r"[A-Z0-9]{6}", re.ASCII)
FILE = "ifsc_branches.json.gz"


def branch_code(value: int | str) -> str:
    """IFSC.json writes all-digit branch codes as numbers (1 is 000001)."""
    return f"{value:06d}" if isinstance(value, int) else str(value).upper()


def build(ifsc_json: dict[str, list[int | str]], *, as_of: dt.date, source: str) -> dict[str, Any]:
    branches = {}
    for bank, codes in sorted(ifsc_json.items()):
        normal = sorted({branch_code(c) for c in codes})
        bad = [c for c in normal if not _BRANCH.fullmatch(c)]
        if bad or not re.fullmatch(r"[A-Z]{4}", bank):
            raise ValueError(f"{bank}: malformed branch codes {bad[:3]}")
        branches[bank] = "".join(normal)
    return {
        "dataset": "ifsc_branches",
        "as_of": as_of.isoformat(),
        "licence": "MIT (razorpay/ifsc, Copyright (c) 2020 Razorpay); the dataset is stated "
                   "to be public domain. Derived from RBI's and NPCI's published lists.",
        "sources": [source],
        "notes": "Bank code -> its branch codes (the 6 characters after the 0), concatenated "
                 "in sorted order. Built by heddle.identify.importers.ifsc_list.",
        "count": sum(len(v) // 6 for v in branches.values()),
        "branches": branches,
    }


class BranchList:
    """Which IFSCs exist: per bank code, sorted 6-byte branch codes searched in place."""

    def __init__(self, data: dict[str, Any]):
        self.as_of = dt.date.fromisoformat(data["as_of"])
        self.count: int = data["count"]
        self._banks = {bank: codes.encode("ascii") for bank, codes in data["branches"].items()}

    def covers(self, bank: str) -> bool:
        """True when RBI's list gives this bank code's branches (260 bank codes do)."""
        return bank in self._banks

    def exists(self, ifsc: str) -> bool:
        packed = self._banks.get(ifsc[:4])
        if packed is None:
            return False
        key = ifsc[5:].encode("ascii")
        lo, hi = 0, len(packed) // 6
        while lo < hi:
            mid = (lo + hi) // 2
            probe = packed[mid * 6:mid * 6 + 6]
            if probe == key:
                return True
            if probe < key:
                lo = mid + 1
            else:
                hi = mid
        return False

    def banks(self) -> dict[str, int]:
        return {bank: len(codes) // 6 for bank, codes in self._banks.items()}


def load_branch_list() -> BranchList:
    raw = resources.files("heddle.identify").joinpath("data", FILE).read_bytes()
    return BranchList(json.loads(gzip.decompress(raw)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ifsc-json", type=Path, required=True)
    parser.add_argument("--as-of", type=dt.date.fromisoformat, required=True)
    parser.add_argument("--source", default="ifsc (npm registry package by Razorpay), package/src/IFSC.json "
                                             "(RBI NEFT/RTGS and NPCI IMPS lists as compiled by Razorpay)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    data = build(json.loads(args.ifsc_json.read_text(encoding="utf-8")), as_of=args.as_of,
                 source=args.source)
    text = json.dumps(data, separators=(",", ":")).encode("utf-8")
    args.out.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    print(f"{data['count']} IFSCs of {len(data['branches'])} banks written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
