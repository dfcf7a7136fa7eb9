"""The fast path of xlsx_rows: cells and shared strings found with regular expressions in the
decompressed XML, for the plain shapes spreadsheet writers produce, with every other shape
handed to the XML parser.

Why (docs/decisions.md): building an element per cell is most of the cost of reading a
185,000-row sheet (about 5 s of CPU for 1.7 million cells with ElementTree, 8 s with
openpyxl); scanning for `<c r="B7" t="s"><v>12</v></c>` takes about 1.5 s.

What keeps this honest:
- A sheet is scanned first (`plain_sheet`) and read this way only when its `sheetData` has no
  comment, CDATA section, processing instruction or namespace-prefixed element, and every cell
  names its reference (`r="B7"`). Otherwise the caller parses it with ElementTree.
- Within a plain sheet, a cell whose content is not a bare `<v>` or `<is><t>` holding text
  with no markup, entity or carriage return (a formula, rich text, `&amp;`) is parsed by
  ElementTree, cell by cell, so the XML rules (entities, line-end normalisation) are applied
  by the parser, not reimplemented here. The same holds for shared-string items.
"""

from __future__ import annotations

import codecs
import pyexpat
import re
from array import array
from collections.abc import Callable, Iterator
from typing import IO
from xml.etree.ElementTree import Element, ParseError, fromstring

_READ = 1 << 20  # decompressed bytes read at a time
_MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"

_SHEET_DATA = re.compile(r"<(?:([\w.-]+):)?sheetData\b")
# What a plain sheetData must not hold: markup this scanner does not follow, or a cell
# without a double-quoted A1-style reference.
_NOT_PLAIN = re.compile(r'<[!?]|<[\w.-]+:|<c(?![^>]*?\sr="[A-Z]{1,3}[0-9]+")[\s>/]')
# A cell: column letters, row number, type (absent for numbers), content (absent when empty).
_CELL = re.compile(r'<c\b(?=[^>]*?\sr="([A-Z]{1,3})([0-9]+)")(?=[^>]*?\st="(\w+)")?'
                   r'[^>]*?(?:/>|>(.*?)</c>)', re.S)
_PLAIN_VALUE = re.compile(r"<v>([^<\r]*)</v>")
_PLAIN_INLINE = re.compile(r'<is><t(?: xml:space="preserve")?>([^<\r]*)</t></is>')
_PLAIN_ITEM = re.compile(r'<t(?: xml:space="preserve")?>([^<\r]*)</t>')
# Text whose only references are XML's five predefined entities; any other (&#10;) goes to
# the parser.
_OTHER_REFERENCE = re.compile(r"&(?!(?:amp|lt|gt|quot|apos);)")
_ITEM = re.compile(r"<si>(.*?)</si>|<si/>", re.S)
_NOT_PLAIN_SST = re.compile(r"<[!?]|<[\w.-]+:|<si\s")


class XlsxError(ValueError):
    """The file is not a workbook these readers can read."""


class StringTable:
    """The shared-string table, as one UTF-8 buffer and the end offset of each string.

    Why: the RBI list has about 370,000 distinct strings (every branch's name and address);
    as Python strings, with their object headers, they put the import's peak at 205 MB, over
    its 200 MB budget; as the text plus 4 bytes a string, 173 MB. A string is decoded again
    each time a cell refers to it."""

    def __init__(self) -> None:
        self._text = bytearray()
        self._ends = array("I")

    def append(self, text: str) -> None:
        self._text += text.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._text))

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: int) -> str:
        if index < 0:
            raise IndexError(index)
        end = self._ends[index]
        start = self._ends[index - 1] if index else 0
        return self._text[start:end].decode("utf-8", "surrogatepass")


class NotPlain(Exception):
    """The part holds markup the scanner does not follow; parse it with ElementTree."""


def _chunks(stream: IO[bytes], cut: Callable[[str], int]) -> Iterator[str]:
    """The decompressed, decoded text in pieces that end where `cut` says (after a whole
    element), the rest carried into the next piece."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    tail = ""
    while True:
        raw = stream.read(_READ)
        text = tail + decoder.decode(raw, final=not raw)
        end = len(text) if not raw else cut(text)
        if end > 0:
            yield text[:end]
        tail = text[max(end, 0):]
        if not raw:
            return


def _after_last(*marks: str) -> Callable[[str], int]:
    def cut(text: str) -> int:
        return max(text.rfind(mark) + len(mark) if mark in text else -1 for mark in marks)
    return cut


class _WellFormed:
    """A stream that checks, as it is read, that its bytes are well-formed XML (expat with no
    handlers: about 0.4 s for the 60 MB sheet of the RBI list)."""

    def __init__(self, stream: IO[bytes]):
        self._stream = stream
        self._parser = pyexpat.ParserCreate()

    def read(self, size: int) -> bytes:
        data = self._stream.read(size)
        try:
            self._parser.Parse(data, not data)
        except pyexpat.ExpatError as exc:
            raise XlsxError(f"the sheet XML is not well formed: {exc}") from None
        return data


def plain_sheet(stream: IO[bytes]) -> bool:
    """Whether the sheet is well-formed XML whose `sheetData` can be scanned (see the module
    docstring). Raises XlsxError when it is not well formed."""
    inside: bool | None = False  # None: past sheetData
    for piece in _chunks(_WellFormed(stream), _after_last(">")):
        start = 0
        if not inside:
            found = _SHEET_DATA.search(piece)
            if found is None:
                continue
            if found.group(1):
                return False  # a prefixed SpreadsheetML namespace
            inside, start = True, found.end()
        if inside is None:
            continue  # past sheetData: only checked for well-formedness
        end = piece.find("</sheetData>", start)
        if _NOT_PLAIN.search(piece, start, len(piece) if end < 0 else end):
            return False  # ElementTree reads it, and finds any fault in the rest
        if end >= 0:
            inside = None
    return True


def scan_rows(stream: IO[bytes], strings: StringTable, slow_value: Callable[[Element, StringTable], str],
              ) -> Iterator[tuple[int, list[str]]]:
    """(row number, cell texts) for each row holding a cell, from a plain sheet."""
    number, row = 0, None
    columns: dict[str, int] = {}
    for piece in _chunks(stream, _after_last("</c>", "</row>")):
        for letters, digits, kind, content in _CELL.findall(piece):
            at = int(digits)
            if at != number:
                if row is not None:
                    yield number, row
                number, row = at, []
            index = columns.get(letters)
            if index is None:
                index = columns[letters] = _column_index(letters)
            if index > len(row):
                row.extend([""] * (index - len(row)))
            row.append(_value(kind or "n", content, strings, slow_value))
    if row is not None:
        yield number, row


def scan_strings(stream: IO[bytes], slow_item: Callable[[Element], str]) -> StringTable:
    """The shared-string table; raises NotPlain for markup the scanner does not follow."""
    strings = StringTable()
    for piece in _chunks(stream, _after_last("</si>", "<si/>")):
        body_at = piece.find("<sst")
        if _NOT_PLAIN_SST.search(piece, piece.find(">", body_at) if body_at >= 0 else 0):
            raise NotPlain
        for item in _ITEM.findall(piece):
            plain = _PLAIN_ITEM.fullmatch(item)
            text = _plain_text(plain.group(1)) if plain else None
            strings.append(text if text is not None else slow_item(
                _fragment(f'<si xmlns="{_MAIN_NS}">{item}</si>')))
    return strings


def _value(kind: str, content: str, strings: StringTable,
           slow_value: Callable[[Element, StringTable], str]) -> str:
    if not content:
        return ""
    plain = (_PLAIN_INLINE if kind == "inlineStr" else _PLAIN_VALUE).fullmatch(content)
    text = _plain_text(plain.group(1)) if plain else None
    if text is None or (kind == "n" and not text.isdigit()):
        return slow_value(_fragment(f'<c xmlns="{_MAIN_NS}" t="{kind}">{content}</c>'), strings)
    if kind == "s":
        try:
            return strings[int(text)]
        except (ValueError, IndexError):
            return slow_value(_fragment(f'<c xmlns="{_MAIN_NS}" t="s">{content}</c>'), strings)
    if kind == "b":
        return "TRUE" if text.strip() == "1" else "FALSE"
    return text


def _plain_text(text: str) -> str | None:
    """The text with the predefined entities replaced; None when it holds another reference."""
    if "&" not in text:
        return text
    if _OTHER_REFERENCE.search(text):
        return None
    return (text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
            .replace("&apos;", "'").replace("&amp;", "&"))


def _fragment(xml: str) -> Element:
    try:
        return fromstring(xml)
    except ParseError as exc:
        raise XlsxError(f"a cell is not well formed XML: {exc}") from None


def _column_index(letters: str) -> int:
    index = 0
    for ch in letters:
        index = index * 26 + ord(ch) - 64
    return index - 1
