"""The rows of an XLSX workbook's sheets, streamed, each row a list of cell texts: found by
xlsx_scan's regular expressions in a plain sheet, else parsed with the standard library's C
XML parser (ElementTree), which is also the reference the scanner is tested against.

Why not openpyxl or python-calamine (see docs/decisions.md): for the RBI's 185,000-row IFSC
list, openpyxl's read-only reader builds a Python cell object per cell (about 12 s of CPU,
most of the import), and python-calamine loads the whole sheet into memory (190 MB peak for
the reader alone, over the import's 200 MB budget). What a directory import needs of
SpreadsheetML is small and fixed (ECMA-376 Part 1, section 18): the sheet list and its relationships, the shared-string
table, and for each cell its column, type and value. Styles, formulas and dates are not
needed: a directory's cells are text and whole numbers.

Memory: the shared-string table is held (cells refer to it by index) as one UTF-8 buffer;
each row is dropped as soon as it is read.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections.abc import Iterator
from typing import IO
from xml.etree.ElementTree import Element, ParseError, XMLParser, XMLPullParser

from heddle.identify.importers.xlsx_scan import (
    NotPlain,
    StringTable,
    XlsxError,
    plain_sheet,
    scan_rows,
    scan_strings,
)

_MAIN = ("http://schemas.openxmlformats.org/spreadsheetml/2006/main",
         "http://purl.oclc.org/ooxml/spreadsheetml/main")  # transitional, strict
_OFFICE_REL = ("http://schemas.openxmlformats.org/officeDocument/2006/relationships",
               "http://purl.oclc.org/ooxml/officeDocument/relationships")
_PACKAGE_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_CHUNK = 1 << 16  # bytes of decompressed XML fed to the parser at a time
_ESCAPED = re.compile(r"_x([0-9A-Fa-f]{4})_")  # ST_Xstring's escape for control characters
_COLUMN = re.compile(r"[A-Z]+")


def workbook_sheets(archive: zipfile.ZipFile) -> list[tuple[str, str]]:
    """(sheet name, part path) for each sheet, in the workbook's order."""
    book = _office_document(archive)
    rels = _relationships(archive, book)
    root = _parse_whole(archive, book)
    ns = _namespace(root.tag)
    sheets = []
    for sheet in root.iter(f"{{{ns}}}sheet"):
        rel_id = next((sheet.get(f"{{{r}}}id") for r in _OFFICE_REL if sheet.get(f"{{{r}}}id")),
                      None)
        if rel_id in rels:
            sheets.append((sheet.get("name") or "", rels[rel_id]))
    if not sheets:
        raise XlsxError("the workbook lists no sheets")
    return sheets


def shared_strings(archive: zipfile.ZipFile, *, scan: bool = True) -> StringTable:
    """The shared-string table (empty when the workbook has none). `scan=False` parses it
    with ElementTree only (the reference the scanner is tested against)."""
    book = _office_document(archive)
    rels = _relationships(archive, book, kind="sharedStrings")
    path = next(iter(rels.values()), None)
    if path is None or path not in archive.NameToInfo:
        return StringTable()
    try:
        if scan:
            with archive.open(path) as stream:
                return scan_strings(stream, rich_text)
    except NotPlain:
        pass
    strings = StringTable()
    with archive.open(path) as stream:
        for element, parent in _stream_elements(stream, "si"):
            strings.append(rich_text(element))
            parent.remove(element)
    return strings


def sheet_rows(archive: zipfile.ZipFile, path: str, strings: StringTable, *,
               scan: bool = True) -> Iterator[tuple[int, list[str]]]:
    """(row number, cell texts) for each row holding a cell; empty cells are "". `scan=False`
    parses with ElementTree only."""
    with archive.open(path) as stream:
        plain = scan and plain_sheet(stream)
    if plain:
        with archive.open(path) as stream:
            yield from scan_rows(stream, strings, cell_value)
        return
    number = 0
    with archive.open(path) as stream:
        for row, parent in _stream_elements(stream, "row"):
            try:
                number = int(row.get("r") or number + 1)
            except ValueError:
                raise XlsxError(f"a row after row {number} has the number {row.get('r')!r}") from None
            cells = _cells(row, strings)
            parent.remove(row)
            if cells:
                yield number, cells


def _cells(row: Element, strings: StringTable) -> list[str]:
    cells: list[str] = []
    for cell in row:
        ref = cell.get("r")
        if ref:
            # Cells may be omitted; the reference (e.g. "AB12") says where this one goes.
            letters = _COLUMN.match(ref)
            if letters:
                index = 0
                for ch in letters.group():
                    index = index * 26 + ord(ch) - 64
                if index - 1 > len(cells):
                    cells.extend([""] * (index - 1 - len(cells)))
        cells.append(cell_value(cell, strings))
    return cells


def cell_value(cell: Element, strings: StringTable) -> str:
    kind = cell.get("t", "n")
    if kind == "inlineStr":
        inline = next((child for child in cell if child.tag.endswith("}is")), None)
        return "" if inline is None else rich_text(inline)
    value = next((child.text for child in cell if child.tag.endswith("}v")), None)
    if value is None:
        return ""
    if kind == "s":
        try:
            return strings[int(value)]
        except (ValueError, IndexError):
            raise XlsxError(f"cell {cell.get('r', '?')} refers to shared string {value!r}, which "
                            "the workbook does not have") from None
    if kind == "b":
        return "TRUE" if value.strip() == "1" else "FALSE"
    if kind == "n" and ("." in value or "E" in value or "e" in value):
        # Excel stores every number as a double: 110001 may be written "110001" or
        # "1.10001E5". Whole numbers (a PIN, a MICR code) read as they were typed.
        try:
            number = float(value)
        except ValueError:
            return value
        if number.is_integer() and abs(number) < 1e15:
            return str(int(number))
    return value


def rich_text(element: Element) -> str:
    """The text of a string item: its <t>, or its runs' <t>s; phonetic runs (<rPh>) left out."""
    parts = []
    for child in element:
        local = child.tag.rpartition("}")[2]
        if local == "t":
            parts.append(child.text or "")
        elif local == "r":
            parts.extend(t.text or "" for t in child if t.tag.endswith("}t"))
    text = "".join(parts)
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text) if "_x" in text else text


def _stream_elements(stream: IO[bytes], local: str) -> Iterator[tuple[Element, Element]]:
    """Each complete element named `local` (in the SpreadsheetML namespace) with its parent,
    parsed a chunk at a time. The caller removes the element from its parent once read, so
    the tree never holds more than a chunk's worth of rows."""
    parser = XMLPullParser(events=("start", "end"))
    names = {f"{{{ns}}}{local}" for ns in _MAIN}
    parents: list[Element] = []
    try:
        while chunk := stream.read(_CHUNK):
            parser.feed(chunk)
            for event, element in parser.read_events():
                if event == "start":
                    parents.append(element)
                    continue
                parents.pop()
                if element.tag in names and parents:
                    yield element, parents[-1]
        parser.close()
    except ParseError as exc:
        raise XlsxError(f"the sheet XML is not well formed: {exc}") from None


def _office_document(archive: zipfile.ZipFile) -> str:
    """The workbook part's path, from the package relationships (usually xl/workbook.xml)."""
    for target in _relationships(archive, "", kind="officeDocument").values():
        if target in archive.NameToInfo:
            return target
    if "xl/workbook.xml" in archive.NameToInfo:
        return "xl/workbook.xml"
    raise XlsxError("the file holds no workbook part (is it an XLSX workbook?)")


def _relationships(archive: zipfile.ZipFile, part: str, kind: str | None = None) -> dict[str, str]:
    """Relationship id -> target part path for `part` ("" for the package itself)."""
    folder, name = posixpath.split(part)
    rels_path = posixpath.join(folder, "_rels", f"{name}.rels")
    if rels_path not in archive.NameToInfo:
        return {}
    targets = {}
    for rel in _parse_whole(archive, rels_path).iter(_PACKAGE_REL):
        if kind and not (rel.get("Type") or "").endswith(f"/{kind}"):
            continue
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External":
            continue
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(
            posixpath.join(folder, target))
        targets[rel.get("Id") or ""] = path
    return targets


def _parse_whole(archive: zipfile.ZipFile, path: str) -> Element:
    """A small part (workbook, relationships), parsed whole."""
    parser = XMLParser()
    try:
        with archive.open(path) as stream:
            while chunk := stream.read(_CHUNK):
                parser.feed(chunk)
        return parser.close()
    except ParseError as exc:
        raise XlsxError(f"{path} is not well formed XML: {exc}") from None


def _namespace(tag: str) -> str:
    return tag[1:].partition("}")[0] if tag.startswith("{") else ""
