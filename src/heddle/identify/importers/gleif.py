"""GLEIF's BIC-to-LEI relationship file, named from GLEIF's LEI records, into `identify_directory`.

GLEIF publishes the relationship file with SWIFT every month (CSV, columns `LEI,BIC`) and the
LEI records (legal names) in its golden copy (LEI-CDF, CSV with `LEI` and `Entity.LegalName`
columns, usually zipped); both are free of charge under CC0 1.0. This is the only open
BIC-keyed source: bank-code registries map bank codes to BICs, which says who routes through
a BIC, not who holds it (see heddle.identify.bics). Heddle ships none of its rows; an operator
downloads both files from GLEIF and runs

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
    "CC0-1.0: GLEIF publishes LEI data and the BIC-to-LEI relationship files free of "
    "charge under Creative Commons CC0 1.0 (no rights reserved); no notice is required. "
    "Attribution kept as a courtesy: 'Source: GLEIF, BIC-to-LEI relationship file, with "
    "SWIFT'."
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


def parse_gleif_bic_lei(data: bytes, names: Path) -> ParsedRows:
    """`swift` rows from the relationship file `data`, named from the LEI records at `names`."""
    relationships, bad = read_relationships(data)
    yield from bad
    legal_names = read_names(names, {lei for lei, _ in relationships.values()})
    for bic, (lei, line) in sorted(relationships.items(), key=lambda item: item[1][1]):
        name = legal_names.get(lei)
        if name is None:
            yield BadRow(line, f"LEI {lei} of {bic} has no legal name in the names file")
            continue
        if len(name) > _NAME_LIMIT:
            yield BadRow(line, f"the legal name of LEI {lei} is longer than {_NAME_LIMIT} characters")
            continue
        yield DirectoryRow(
            rail="swift",
            code=bic,
            name=name,
            type=type_of(name),
            country=bic[4:6],
            source=SOURCE,
            bic=bic,
            extra={"lei": lei},
        )


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
        "bics": {r.code: r.extra["lei"] for r in rows},
        "leis": {r.extra["lei"]: r.name for r in rows},
        "bad_rows": [b.to_dict() for b in bad],
    }
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(rows)} BICs would be imported; {len(bad)} bad rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
