"""IFSC directories as CSV: the RBI list of NEFT/RTGS-enabled branches (BANK, IFSC, BRANCH,
ADDRESS, CITY1, CITY2, STATE, STD CODE, PHONE, or with CITY / DISTRICT) and the Razorpay IFSC
dataset (BANK, IFSC, BRANCH, CENTRE, DISTRICT, STATE, ADDRESS, CONTACT, IMPS, RTGS, CITY,
ISO3166, NEFT, MICR, UPI, SWIFT). Header names are matched case-insensitively."""

from __future__ import annotations

import csv
import io
import re

from heddle.identify.importers.base import DirectoryRow, ImportFormatError, decode_lines, fit

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


def parse_ifsc_csv(data: bytes) -> list[DirectoryRow]:
    text = "\n".join(decode_lines(data, "utf-8"))
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise ImportFormatError(0, "the file is empty") from None
    except csv.Error as exc:
        raise ImportFormatError(1, f"unreadable CSV header: {exc}") from None
    names = [h.strip().upper() for h in header]
    columns = {field: next((names.index(h) for h in options if h in names), None)
               for field, options in _COLUMNS.items()}
    if columns["bank"] is None or columns["ifsc"] is None:
        raise ImportFormatError(1, "the header must name the BANK and IFSC columns")
    flags = {rail: names.index(rail) for rail in _RAIL_FLAGS if rail in names}
    rows: list[DirectoryRow] = []
    seen: dict[str, int] = {}
    try:
        for record in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            row = _row(record, len(names), columns, flags, number)
            if row.code in seen:
                raise ImportFormatError(number, f"IFSC {row.code} already appears on line "
                                                f"{seen[row.code]}")
            seen[row.code] = number
            rows.append(row)
    except csv.Error as exc:
        raise ImportFormatError(reader.line_num, f"unreadable CSV: {exc}") from None
    if not rows:
        raise ImportFormatError(0, "the file holds no IFSC rows")
    return rows


def _row(record: list[str], width: int, columns: dict[str, int | None], flags: dict[str, int],
         number: int) -> DirectoryRow:
    if len(record) != width:
        raise ImportFormatError(number, f"expected {width} fields, got {len(record)}")

    def cell(field: str) -> str | None:
        index = columns[field]
        value = record[index].strip() if index is not None else ""
        return None if value.upper() in _EMPTY else value

    ifsc = (cell("ifsc") or "").upper()
    if not _IFSC.fullmatch(ifsc):
        raise ImportFormatError(number, f"{ifsc or 'an empty value'!r} is not an IFSC (4 letters, "
                                        "0, 6 letters or digits)")
    bank = cell("bank")
    if not bank:
        raise ImportFormatError(number, "BANK is empty")
    swift = (cell("swift") or "").upper() or None
    if swift is not None and not _BIC.fullmatch(swift):
        raise ImportFormatError(number, f"SWIFT {swift!r} is not a BIC")
    rails = []
    for rail, index in flags.items():
        value = record[index].strip().upper()
        if value not in _TRUE | _FALSE:
            raise ImportFormatError(number, f"{rail} must be true or false, got {record[index]!r}")
        if value in _TRUE:
            rails.append(rail.lower())
    if not flags:
        rails = ["neft"]  # the RBI list is the list of NEFT-enabled branches
    extra = {field: value for field in ("branch", "address", "district", "state", "micr")
             if (value := cell(field))}
    extra["rails_complete"] = len(flags) == len(_RAIL_FLAGS)
    city = cell("city")
    return DirectoryRow(
        rail="ifsc", code=ifsc, name=fit(bank, 300, "BANK", number), type="bank", country="IN",
        source="ifsc-csv", bic=swift, city=fit(city, 120, "CITY", number) if city else None,
        reachable_rails=rails, extra=extra,
    )
