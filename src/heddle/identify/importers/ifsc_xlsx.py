"""The RBI's IFSC list as published: an XLSX workbook (one or more sheets whose first row
names the BANK and IFSC columns), streamed a row at a time by xlsx_rows (not openpyxl: see
that module and docs/decisions.md for the time and memory a 185,000-row list costs)."""

from __future__ import annotations

import io
import zipfile

from heddle.identify.importers.base import Deduplicator, ImportFormatError, ParsedRows
from heddle.identify.importers.ifsc_csv import IfscLayout, ifsc_rows, is_ifsc_header
from heddle.identify.importers.xlsx_rows import (
    StringTable,
    XlsxError,
    shared_strings,
    sheet_rows,
    workbook_sheets,
)


def parse_ifsc_xlsx(data: bytes) -> ParsedRows:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise ImportFormatError(0, f"not an XLSX workbook: {exc}") from None
    with archive:
        try:
            sheets = workbook_sheets(archive)
            strings = shared_strings(archive)
        except (XlsxError, zipfile.BadZipFile, KeyError, OSError, EOFError) as exc:
            raise ImportFormatError(0, f"not an XLSX workbook: {exc}") from None
        dedupe = Deduplicator("IFSC")
        used = 0
        for name, path in sheets:
            rows = _rows(archive, path, strings, name)
            header = next(rows, None)
            if header is None or not is_ifsc_header(header[1]):
                continue
            used += 1
            layout = IfscLayout(header[1])
            # Line numbers are the sheet's row numbers; one sheet is the usual case.
            yield from ifsc_rows(layout, rows, source="ifsc-xlsx", dedupe=dedupe)
        if not used:
            raise ImportFormatError(1, "no sheet's first row names the BANK and IFSC columns")


def _rows(archive: zipfile.ZipFile, path: str, strings: StringTable, name: str):
    """The sheet's rows; a damaged part (bad XML, truncated data) stops the whole import."""
    try:
        yield from sheet_rows(archive, path, strings)
    except (XlsxError, zipfile.BadZipFile, KeyError, OSError, EOFError) as exc:
        raise ImportFormatError(0, f"sheet {name!r} cannot be read: {exc}") from None
