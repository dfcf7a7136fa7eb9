"""Build `data/bic_lei.json` from GLEIF's BIC-to-LEI relationship file and LEI legal names.

GLEIF publishes the relationship file with SWIFT every month (CSV, columns `LEI,BIC`), and
the LEI records (legal names) in its golden copy; both are free of charge under CC0 1.0. This
is the only BIC-keyed open source: bank-code registries map bank codes to BICs, which says
who routes through a BIC, not who holds it (see heddle.identify.bics).

    python -m heddle.identify.importers.gleif --bic-lei lei-bic.csv --names lei-names.csv \\
        --as-of 2026-11-01 --out src/heddle/identify/data/bic_lei.json

`--names` takes any CSV with `LEI` and `Name` (or GLEIF's `Entity.LegalName`) columns. Rows
whose BIC is malformed or whose LEI has no name are counted and left out, never guessed.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_BIC11 = re.compile(r"[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}[A-Z0-9]{3}", re.ASCII)
_LEI = re.compile(r"[A-Z0-9]{18}[0-9]{2}", re.ASCII)
_NAME_COLUMNS = ("Name", "Entity.LegalName", "LegalName")

LICENCE = ("CC0-1.0: GLEIF publishes LEI data and the BIC-to-LEI relationship files free of "
           "charge under Creative Commons CC0 1.0 (no rights reserved); no notice is required. "
           "Attribution kept as a courtesy: 'Source: GLEIF, BIC-to-LEI relationship file, with "
           "SWIFT'.")


def read_relationships(lines: Iterable[str]) -> tuple[dict[str, str], int]:
    """BIC11 -> LEI from the relationship CSV; returns (map, rows left out). A BIC mapped to
    two LEIs is ambiguous: it is left out, not guessed."""
    seen: dict[str, set[str]] = {}
    bad = 0
    for row in csv.DictReader(lines):
        bic = (row.get("BIC") or "").strip().upper()
        lei = (row.get("LEI") or "").strip().upper()
        if len(bic) == 8:
            bic += "XXX"
        if not _BIC11.fullmatch(bic) or not _LEI.fullmatch(lei):
            bad += 1
            continue
        seen.setdefault(bic, set()).add(lei)
    out = {bic: next(iter(leis)) for bic, leis in seen.items() if len(leis) == 1}
    return out, bad + len(seen) - len(out)


def read_names(lines: Iterable[str]) -> dict[str, str]:
    """LEI -> legal name."""
    reader = csv.DictReader(lines)
    column = next((c for c in _NAME_COLUMNS if c in (reader.fieldnames or ())), None)
    if column is None:
        raise ValueError(f"the names file needs an LEI column and one of {_NAME_COLUMNS}")
    names = {}
    for row in reader:
        lei, name = (row.get("LEI") or "").strip().upper(), " ".join((row.get(column) or "").split())
        if _LEI.fullmatch(lei) and name:
            names[lei] = name
    return names


def build(bics: dict[str, str], names: dict[str, str], *, as_of: dt.date,
          sources: list[str]) -> tuple[dict[str, Any], int]:
    """The shipped dataset: `bics` (BIC11 -> LEI) and `leis` (LEI -> legal name)."""
    kept = {bic: lei for bic, lei in sorted(bics.items()) if lei in names}
    leis = {lei: names[lei] for lei in sorted(set(kept.values()))}
    return {
        "dataset": "bic_lei",
        "as_of": as_of.isoformat(),
        "licence": LICENCE,
        "sources": sources,
        "notes": ("BIC11 -> LEI from GLEIF's BIC-to-LEI relationship file, LEI -> legal name "
                  "from GLEIF's LEI records. Built by heddle.identify.importers.gleif. A BIC8 "
                  "is answered from its head-office row (branch code XXX) only."),
        "bics": kept,
        "leis": leis,
    }, len(bics) - len(kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bic-lei", type=Path, required=True)
    parser.add_argument("--names", type=Path, required=True)
    parser.add_argument("--as-of", type=dt.date.fromisoformat, required=True,
                        help="the relationship file's publication date")
    parser.add_argument("--source", action="append", default=[],
                        help="where the files came from (repeatable)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    with args.bic_lei.open(encoding="utf-8-sig", newline="") as f:
        bics, bad = read_relationships(f)
    with args.names.open(encoding="utf-8-sig", newline="") as f:
        names = read_names(f)
    sources = args.source or [f"GLEIF BIC-to-LEI relationship file ({args.bic_lei.name}) and "
                              f"LEI legal names ({args.names.name})"]
    dataset, unnamed = build(bics, names, as_of=args.as_of, sources=sources)
    args.out.write_text(json.dumps(dataset, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(dataset['bics'])} BICs, {len(dataset['leis'])} LEIs written; {bad} rows "
          f"malformed or ambiguous, {unnamed} without a name", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
