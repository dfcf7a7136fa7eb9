"""GLEIF's BIC-to-LEI relationship file, named from GLEIF's LEI records, into `identify_directory`.

GLEIF publishes the relationship file with SWIFT every month (CSV, columns `LEI,BIC`) and the
LEI records (legal names) in its golden copy (LEI-CDF, CSV with `LEI` and `Entity.LegalName`
columns, usually zipped). The LEI records are CC0 1.0; the relationship file is published under
SWIFT's "BIC/LEI Mapping Table License Agreement": free for any use, on condition that every
copy, in whole or in part, carries SWIFT's notice with the mapping's month (`mapping_notice`).
Heddle stores that month with every row and serves the notice with every answer taken from the
mapping. This is the only open BIC-keyed source: bank-code registries map bank codes to BICs,
which says who routes through a BIC, not who holds it (see heddle.identify.bics). Heddle ships
none of its rows; an operator runs `heddle identify refresh --source gleif`, or downloads both
files from GLEIF and runs

    heddle identify import lei-bic.csv --format gleif-bic-lei --names LEI-CDF.csv.zip

Each BIC becomes a `swift` row keyed by its BIC11 (a BIC8 gets branch code XXX), named with its
LEI's legal name, `extra["lei"]` its LEI. A malformed row, a BIC listed under two LEIs (whose
holder is then unknown) and an LEI without a legal name are bad rows: reported, never guessed.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from heddle.identify.importers.base import (
    BadRow,
    DirectoryRow,
    ImportFormatError,
    ParsedRows,
    csv_reader,
)

_BIC11 = re.compile(r"[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}[A-Z0-9]{3}", re.ASCII)
_LEI = re.compile(r"[A-Z0-9]{18}[0-9]{2}", re.ASCII)
# GLEIF's golden copy names the column Entity.LegalName; other exports of it say LegalName.
_NAME_COLUMNS = ("Entity.LegalName", "LegalName")
SOURCE = "gleif"
_NAME_LIMIT = 300  # identify_directory.name
LICENCE = (
    "LEI records: CC0 1.0 (GLEIF). BIC-to-LEI relationships: SWIFT's BIC/LEI Mapping Table "
    "License Agreement, which requires its notice, with the mapping's month, on every copy in "
    "whole or in part (see `notice`)."
)


def mapping_notice(as_of: dt.date) -> str:
    """SWIFT's notice for a copy of the BIC-to-LEI mapping of `as_of`'s month, word for word
    as the BIC/LEI Mapping Table License Agreement gives it."""
    return (
        f"SWIFT \u00a9 and database rights {as_of.strftime('%B %Y')}. All rights reserved. This "
        "Mapping Table has been developed by SWIFT. Any use of the Mapping Table, in whole or in "
        "part, is subject to the BIC/LEI Mapping Table License Agreement as published with the "
        "Mapping Table available on GLEIF's website. The Mapping Table is updated monthly. For "
        "the latest BIC information and updates, always refer to www.swift.com/bic."
    )


def lei_check_digits_ok(lei: str) -> bool:
    """ISO 17442 (ISO 7064 mod 97-10): letters as 10..35, the whole number mod 97 is 1."""
    return bool(_LEI.fullmatch(lei)) and int("".join(str(int(c, 36)) for c in lei)) % 97 == 1


def read_relationships(data: bytes) -> tuple[dict[str, tuple[str, int]], list[BadRow]]:
    try:
        return _read_relationships(data)
    except UnicodeDecodeError:
        raise ImportFormatError(0, "the BIC-to-LEI file is not UTF-8 text") from None


def _read_relationships(data: bytes) -> tuple[dict[str, tuple[str, int]], list[BadRow]]:
    """BIC11 -> (LEI, line) from the relationship CSV, and the bad rows. A BIC listed under
    two LEIs is ambiguous: every line of it is a bad row."""
    reader = csv_reader(data)
    header = [h.strip() for h in next(reader, [])]
    if "LEI" not in header or "BIC" not in header:
        raise ImportFormatError(1, "GLEIF's BIC-to-LEI file has a header row with LEI and BIC")
    lei_at, bic_at = header.index("LEI"), header.index("BIC")
    seen: dict[str, list[tuple[str, int]]] = {}
    bad: list[BadRow] = []
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        lei = row[lei_at].strip().upper() if len(row) > lei_at else ""
        bic = row[bic_at].strip().upper() if len(row) > bic_at else ""
        bic = bic + "XXX" if len(bic) == 8 else bic
        if not _BIC11.fullmatch(bic):
            bad.append(BadRow(line, f"not a BIC: {bic[:20]!r}"))
        elif not lei_check_digits_ok(lei):
            bad.append(BadRow(line, f"not an LEI (ISO 17442): {lei[:24]!r}"))
        else:
            seen.setdefault(bic, []).append((lei, line))
    out: dict[str, tuple[str, int]] = {}
    for bic, listed in seen.items():
        leis = {lei for lei, _ in listed}
        if len(leis) == 1:
            out[bic] = listed[0]
        else:
            bad += [
                BadRow(
                    line, f"{bic} is listed under {len(leis)} LEIs ({', '.join(sorted(leis))}); its holder is unknown"
                )
                for _, line in listed
            ]
    return out, bad


def _name_lines(path: Path) -> Iterator[str]:
    """The names file's text lines, streamed: GLEIF's golden copy is gigabytes unzipped."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            member = next((n for n in archive.namelist() if n.lower().endswith(".csv")), None)
            if member is None:
                raise ImportFormatError(0, "the names archive holds no CSV file")
            with archive.open(member) as raw:
                yield from io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        return
    with path.open(encoding="utf-8-sig", newline="") as f:
        yield from f


def read_names(path: Path, wanted: set[str]) -> dict[str, str]:
    """LEI -> legal name for the LEIs in `wanted`, from GLEIF's LEI records (LEI-CDF CSV)."""
    try:
        return _read_names(path, wanted)
    except UnicodeDecodeError:
        raise ImportFormatError(0, "the names file is not UTF-8 text") from None
    except zipfile.BadZipFile as exc:
        raise ImportFormatError(0, f"the names archive is damaged: {exc}") from None


def _read_names(path: Path, wanted: set[str]) -> dict[str, str]:
    reader = csv.reader(_name_lines(path))
    header = next(reader, [])
    column = next((c for c in _NAME_COLUMNS if c in header), None)
    if "LEI" not in header or column is None:
        raise ImportFormatError(1, f"the names file needs an LEI column and one of {_NAME_COLUMNS}")
    lei_at, name_at = header.index("LEI"), header.index(column)
    names: dict[str, str] = {}
    for row in reader:
        if len(row) <= max(lei_at, name_at):
            continue
        lei = row[lei_at].strip().upper()
        if lei in wanted:
            name = " ".join(row[name_at].split())
            if name:
                names[lei] = name
    return names


# LEI records give no institution type; a legal name that says it is the rule here.
_TYPE_WORDS = (
    ("building society", "building_society"),
    ("credit union", "credit_union"),
    ("microfinance bank", "microfinance_bank"),
)


def type_of(legal_name: str) -> str:
    folded = legal_name.casefold()
    return next((kind for phrase, kind in _TYPE_WORDS if phrase in folded), "bank")


@dataclass(frozen=True, slots=True)
class LeiRecord:
    """What Heddle keeps of an LEI record: its legal name, whether the entity still exists
    (`active`, `merged`, `closed`), and its successor where GLEIF names one."""

    name: str
    status: str = "active"
    successor_lei: str | None = None
    successor_name: str | None = None


# Registration statuses whose LEI says nothing reliable about who holds a BIC.
_VOID_REGISTRATIONS = frozenset({"ANNULLED", "DUPLICATE"})


def entity_status(entity_status: str, registration_status: str, expiration_reason: str,
                  has_successor: bool) -> str | None:
    """`active`, `merged` or `closed` from GLEIF's entity and registration statuses; None for
    an annulled or duplicate LEI. A lapsed LEI (not renewed) is still an active entity."""
    registration = registration_status.upper()
    if registration in _VOID_REGISTRATIONS:
        return None
    gone = entity_status.upper() == "INACTIVE" or registration in {"RETIRED", "MERGED"}
    if not gone:
        return "active"
    if has_successor or registration == "MERGED" or expiration_reason.upper() == "CORPORATE_ACTION":
        return "merged"
    return "closed"


def read_api_records(document: dict) -> dict[str, LeiRecord | None]:
    """LEI -> record from one page of GLEIF's API (`/api/v1/lei-records`, JSON:API); None for
    an LEI whose record is void (annulled, duplicate). Raises ImportFormatError when the page
    is not such a document."""
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise ImportFormatError(0, "GLEIF's LEI records answer is not a JSON:API list (no `data` array)")
    out: dict[str, LeiRecord | None] = {}
    for item in data:
        attributes = item.get("attributes") if isinstance(item, dict) else None
        if not isinstance(attributes, dict):
            raise ImportFormatError(0, "an LEI record without `attributes`")
        lei = str(attributes.get("lei") or item.get("id") or "").upper()
        entity = attributes.get("entity") or {}
        registration = attributes.get("registration") or {}
        name = " ".join(str((entity.get("legalName") or {}).get("name") or "").split())
        successor = entity.get("successorEntity") or next(iter(entity.get("successorEntities") or []), None) or {}
        successor_lei = successor.get("lei") or None
        successor_name = successor.get("name") or None
        status = entity_status(str(entity.get("status") or ""), str(registration.get("status") or ""),
                               str((entity.get("expiration") or {}).get("reason") or ""),
                               bool(successor_lei or successor_name))
        if not lei or not name:
            continue
        out[lei] = None if status is None else LeiRecord(name, status, successor_lei, successor_name)
    return out


def parse_gleif_bic_lei(data: bytes, names: Path) -> ParsedRows:
    """`swift` rows from the relationship file `data`, named from the LEI records at `names`."""
    relationships, bad = read_relationships(data)
    yield from bad
    legal_names = read_names(names, {lei for lei, _ in relationships.values()})
    yield from mapping_rows(relationships, {lei: LeiRecord(name) for lei, name in legal_names.items()})


def mapping_rows(relationships: dict[str, tuple[str, int]], records: dict[str, LeiRecord | None],
                 as_of: dt.date | None = None) -> ParsedRows:
    """A `swift` row per BIC, named from its LEI's record; `as_of` (the mapping's date) is
    kept with every row, as the licence notice names it."""
    for bic, (lei, line) in sorted(relationships.items(), key=lambda item: item[1][1]):
        if lei in records and records[lei] is None:
            yield BadRow(line, f"LEI {lei} of {bic} is annulled or a duplicate")
            continue
        record = records.get(lei)
        if record is None:
            yield BadRow(line, f"LEI {lei} of {bic} has no legal name in GLEIF's LEI records")
            continue
        if len(record.name) > _NAME_LIMIT:
            yield BadRow(line, f"the legal name of LEI {lei} is longer than {_NAME_LIMIT} characters")
            continue
        extra: dict[str, str] = {"lei": lei}
        if as_of is not None:
            extra["as_of"] = as_of.isoformat()
        if record.status != "active":
            extra["status"] = record.status
        if record.successor_lei:
            extra["successor_lei"] = record.successor_lei
        if record.successor_name:
            extra["successor_name"] = record.successor_name
        yield DirectoryRow(rail="swift", code=bic, name=record.name, type=type_of(record.name),
                           country=bic[4:6], source=SOURCE, bic=bic, extra=extra)


def main(argv: list[str] | None = None) -> int:
    """Check a downloaded pair of files without a database: parse them as the import would and
    write what it would store (BIC11 -> LEI, LEI -> legal name) and the bad rows to --out."""
    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--bic-lei", type=Path, required=True)
    parser.add_argument("--names", type=Path, required=True)
    parser.add_argument(
        "--as-of", type=dt.date.fromisoformat, required=True, help="the relationship file's publication date"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows, bad = [], []
    for item in parse_gleif_bic_lei(args.bic_lei.read_bytes(), args.names):
        (bad if isinstance(item, BadRow) else rows).append(item)
    report = {
        "as_of": args.as_of.isoformat(),
        "licence": LICENCE,
        "notice": mapping_notice(args.as_of),
        "bics": {r.code: r.extra["lei"] for r in rows},
        "leis": {r.extra["lei"]: r.name for r in rows},
        "bad_rows": [b.to_dict() for b in bad],
    }
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(rows)} BICs would be imported; {len(bad)} bad rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
