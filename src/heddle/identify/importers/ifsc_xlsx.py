"""The RBI's IFSC list as published: an XLSX workbook (one or more sheets whose first row
names the BANK and IFSC columns), read with openpyxl in read-only mode so a 185,000-row
workbook is streamed rather than loaded."""

from __future__ import annotations

import io
import zipfile

from openpyxl import load_workbook

from heddle.identify.importers.base import Deduplicator, ImportFormatError, ParsedRows
from heddle.identify.importers.ifsc_csv import IfscLayout, ifsc_rows, is_ifsc_header


def parse_ifsc_xlsx(data: bytes) -> ParsedRows:
    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise ImportFormatError(0, f"not an XLSX workbook: {exc}") from None
    try:
        dedupe = Deduplicator("IFSC")
        used = 0
        for sheet in workbook.worksheets:
            rows = sheet.iter_rows(values_only=True)
            header = next(rows, None)
            if header is None or not is_ifsc_header(header):
                continue
            used += 1
            layout = IfscLayout(header)
            numbered = ((number, row) for number, row in enumerate(rows, start=2))
            # Line numbers are "sheet!row" in spirit; one sheet is the usual case.
            yield from ifsc_rows(layout, numbered, source="ifsc-xlsx", dedupe=dedupe)
        if not used:
            raise ImportFormatError(1, "no sheet's first row names the BANK and IFSC columns")
    finally:
        workbook.close()
