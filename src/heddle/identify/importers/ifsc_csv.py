"""IFSC directories: the RBI list of NEFT/RTGS-enabled branches as CSV (BANK, IFSC, BRANCH,
ADDRESS, CITY1, CITY2, STATE, STD CODE, PHONE, or with CITY / DISTRICT) and the Razorpay IFSC
dataset (BANK, IFSC, BRANCH, CENTRE, DISTRICT, STATE, ADDRESS, CONTACT, IMPS, RTGS, CITY,
ISO3166, NEFT, MICR, UPI, SWIFT). Header names are matched case-insensitively. The RBI's XLSX
(ifsc_xlsx.py) goes through the same row rules."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence

from heddle.identify.importers.base import (
    BadRow,
    Deduplicator,
    DirectoryRow,
    ImportFormatError,
    ParsedRows,
    RowError,
    csv_reader,
    fit,
)

_IFSC = re.compile(r"[A-Z]{4}0[A-Z0-9]{6}", re.ASCII)
_BIC = re.compile(r"[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}(?:[A-Z0-9]{3})?", re.ASCII)
_EMPTY = {"", "NA", "N/A", "NULL", "NONE", "-"}
_TRUE = {"TRUE", "YES", "Y", "1"}
_FALSE = {"FALSE", "NO", "N", "0", ""}

# Our field -> header names that carry it, in order of preference.
_COLUMNS = {
    "bank": ("BANK", "BANK NAME"),
    "ifsc": ("IFSC", "IFSC CODE"),
    "branch": ("BRANCH", "BRANCH NAME"),
    "address": ("ADDRESS",),
    "city": ("CITY", "CITY1", "CENTRE"),
    "district": ("DISTRICT", "CITY2"),
    "state": ("STATE",),
    "micr": ("MICR", "MICR CODE"),
    "swift": ("SWIFT",),
}
_RAIL_FLAGS = ("NEFT", "RTGS", "IMPS", "UPI")


class IfscLayout:
    """Where each field is in a row, from the header."""

    def __init__(self, header: Sequence[object], line: int = 1):
        self.names = [str(h or "").strip().upper() for h in header]
        self.columns = {field: next((self.names.index(h) for h in options if h in self.names), None)
                        for field, options in _COLUMNS.items()}
        if self.columns["bank"] is None or self.columns["ifsc"] is None:
            raise ImportFormatError(line, "the header must name the BANK and IFSC columns")
        self.flags = {rail: self.names.index(rail) for rail in _RAIL_FLAGS if rail in self.names}
        self.width = len(self.names)


def is_ifsc_header(header: Sequence[object]) -> bool:
    names = {str(h or "").strip().upper() for h in header}
    return bool(names & set(_COLUMNS["bank"])) and bool(names & set(_COLUMNS["ifsc"]))


def parse_ifsc_csv(data: bytes) -> ParsedRows:
    reader = csv_reader(data)
    try:
        header = next(reader)
    except StopIteration:
        raise ImportFormatError(0, "the file is empty") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise ImportFormatError(1, f"unreadable CSV header: {exc}") from None
    layout = IfscLayout(header)

    def records():
        try:
            for record in reader:
                yield reader.line_num, record
        except csv.Error as exc:
            raise ImportFormatError(reader.line_num, f"unreadable CSV: {exc}") from None
        except UnicodeDecodeError:
            raise ImportFormatError(reader.line_num + 1, "not valid utf-8 text") from None

    yield from ifsc_rows(layout, records(), source="ifsc-csv")


def ifsc_rows(layout: IfscLayout, records: Iterable[tuple[int, Sequence[object]]], *,
              source: str, dedupe: Deduplicator | None = None) -> ParsedRows:
    dedupe = dedupe or Deduplicator("IFSC")
    for number, record in records:
        cells = ["" if c is None else str(c) for c in record]
        if not any(cell.strip() for cell in cells):
            continue
        try:
            row = _row(cells, layout, source)
            dedupe.check(row.code, number)
        except RowError as exc:
            yield BadRow(number, str(exc))
            continue
        yield row


def _row(record: list[str], layout: IfscLayout, source: str) -> DirectoryRow:
    if len(record) != layout.width:
        # A spreadsheet row may carry more or fewer empty trailing cells than its header; a
        # CSV row must match the header.
        if source == "ifsc-csv":
            raise RowError(f"expected {layout.width} fields, got {len(record)}")
        record = (record + [""] * layout.width)[:layout.width]

    def cell(field: str) -> str | None:
        index = layout.columns[field]
        value = record[index].strip() if index is not None else ""
        return None if value.upper() in _EMPTY else value

    ifsc = (cell("ifsc") or "").upper()
    if not _IFSC.fullmatch(ifsc):
        raise RowError(f"{ifsc or 'an empty value'!r} is not an IFSC (4 letters, 0, 6 letters or "
                       "digits)")
    bank = cell("bank")
    if not bank:
        raise RowError("BANK is empty")
    swift = (cell("swift") or "").upper() or None
    if swift is not None and not _BIC.fullmatch(swift):
        raise RowError(f"SWIFT {swift!r} is not a BIC")
    rails = []
    for rail, index in layout.flags.items():
        value = record[index].strip().upper()
        if value not in _TRUE | _FALSE:
            raise RowError(f"{rail} must be true or false, got {record[index]!r}")
        if value in _TRUE:
            rails.append(rail.lower())
    if not layout.flags:
        rails = ["neft"]  # the RBI list is the list of NEFT-enabled branches
    extra = {field: value for field in ("branch", "address", "district", "state", "micr")
             if (value := cell(field))}
    extra["rails_complete"] = len(layout.flags) == len(_RAIL_FLAGS)
    city = cell("city")
    return DirectoryRow(
        rail="ifsc", code=ifsc, name=fit(bank, 300, "BANK"), type="bank", country="IN",
        source=source, bic=swift, city=fit(city, 120, "CITY") if city else None,
        reachable_rails=rails, extra=extra,
    )
