"""UK sort codes from an EISCD-style CSV (Pay.UK's Extended Industry Sort Code Directory is
licensed, not published, so the columns are matched by header name, case-insensitively):

  sort code      SORT CODE | SORTING CODE | SORTCODE          (6 digits, dashes allowed)
  owning bank    FULL OWNING BANK NAME | OWNING BANK NAME | OWNING BANK | BANK NAME
  BIC            BIC | BIC 1 | BIC1                             (optional)
  branch         SHORT BRANCH TITLE | BRANCH TITLE | BRANCH    (optional)
  town           TOWN | CITY | PLACE                            (optional)
  rails          FPS STATUS | FASTER PAYMENTS, BACS STATUS | BACS, CHAPS STATUS | CHAPS
                 (optional; M member, A agency, Y yes -> reachable; N, blank -> not)

Each row is an entry for that exact sort code, so it identifies: this is the directory that
tells an agency bank's code from its clearing bank's range.
"""

from __future__ import annotations

import csv
import re

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

_COLUMNS = {
    "sort_code": ("SORT CODE", "SORTING CODE", "SORTCODE"),
    "bank": ("FULL OWNING BANK NAME", "OWNING BANK NAME", "OWNING BANK", "BANK NAME"),
    "bic": ("BIC", "BIC 1", "BIC1"),
    "branch": ("SHORT BRANCH TITLE", "BRANCH TITLE", "BRANCH"),
    "town": ("TOWN", "CITY", "PLACE"),
}
_RAILS = {"fps": ("FPS STATUS", "FASTER PAYMENTS"), "bacs": ("BACS STATUS", "BACS"),
          "chaps": ("CHAPS STATUS", "CHAPS")}
_REACHABLE, _NOT = {"M", "A", "Y", "YES"}, {"N", "NO", ""}
_SORT_CODE = re.compile(r"[0-9]{2}-?[0-9]{2}-?[0-9]{2}", re.ASCII)
_BIC = re.compile(r"[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}(?:[A-Z0-9]{3})?", re.ASCII)


def _index(names: list[str], options: tuple[str, ...]) -> int | None:
    return next((names.index(h) for h in options if h in names), None)


def parse_eiscd(data: bytes) -> ParsedRows:
    reader = csv_reader(data)
    try:
        header = next(reader)
    except (StopIteration, csv.Error, UnicodeDecodeError):
        raise ImportFormatError(1, "the file has no CSV header") from None
    names = [h.strip().upper() for h in header]
    columns = {field: _index(names, options) for field, options in _COLUMNS.items()}
    if columns["sort_code"] is None or columns["bank"] is None:
        raise ImportFormatError(1, "the header must name the sort code and owning bank columns")
    rails = {rail: i for rail, options in _RAILS.items() if (i := _index(names, options)) is not None}
    dedupe = Deduplicator("sort code")
    try:
        for record in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            try:
                row = _row(record, len(names), columns, rails)
                dedupe.check(row.code, number)
            except RowError as exc:
                yield BadRow(number, str(exc))
                continue
            yield row
    except csv.Error as exc:
        raise ImportFormatError(reader.line_num, f"unreadable CSV: {exc}") from None
    except UnicodeDecodeError:
        raise ImportFormatError(reader.line_num + 1, "not valid utf-8 text") from None


def _row(record: list[str], width: int, columns: dict[str, int | None],
         rails: dict[str, int]) -> DirectoryRow:
    if len(record) != width:
        raise RowError(f"expected {width} fields, got {len(record)}")

    def cell(field: str) -> str:
        index = columns[field]
        return record[index].strip() if index is not None else ""

    code = cell("sort_code")
    if not _SORT_CODE.fullmatch(code):
        raise RowError(f"{code or 'an empty value'!r} is not a sort code (6 digits)")
    code = code.replace("-", "")
    bank = cell("bank")
    if not bank:
        raise RowError("the owning bank name is empty")
    bic = cell("bic").upper() or None
    if bic is not None and not _BIC.fullmatch(bic):
        raise RowError(f"BIC {bic!r} is not a BIC")
    reachable = []
    for rail, index in rails.items():
        status = record[index].strip().upper()
        if status not in _REACHABLE | _NOT:
            raise RowError(f"{rail.upper()} status must be M, A, Y or N, got {record[index]!r}")
        if status in _REACHABLE:
            reachable.append(rail)
    town = cell("town")
    extra = {"branch": cell("branch")} if cell("branch") else {}
    extra["rails_complete"] = len(rails) == len(_RAILS)
    return DirectoryRow(
        rail="sort_code", code=code, name=fit(bank, 300, "owning bank name"),
        type="financial_institution",  # the directory does not say which kind
        country="GB", source="eiscd", bic=bic, city=fit(town.title(), 120, "town") if town else None,
        reachable_rails=reachable, extra=extra,
    )
