"""The XLSX reader behind `--format ifsc-xlsx`: the regex scanner (fast path) gives exactly
what ElementTree (the reference) and openpyxl give, for workbooks written by openpyxl
(inline strings) and as Excel writes them (shared strings), and falls back to ElementTree for
what it does not follow. Speed is measured in bench/identify_import.py, not here."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import zipfile
from pathlib import Path

import pytest
from openpyxl import Workbook, load_workbook
from sqlalchemy import func, select
from typer.testing import CliRunner

from heddle.db.base import Database
from heddle.identify.cli import app
from heddle.identify.importers import ImportFormatError, parse_ifsc_xlsx
from heddle.identify.importers.base import BadRow
from heddle.identify.importers.xlsx_rows import shared_strings, sheet_rows, workbook_sheets
from heddle.identify.importers.xlsx_scan import StringTable
from heddle.identify.models import DirectoryEntry

_spec = importlib.util.spec_from_file_location(
    "identify_import_bench", Path(__file__).parents[2] / "bench" / "identify_import.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
runner = CliRunner()

HEADER = ("<row r=\"1\"><c r=\"A1\" t=\"s\"><v>0</v></c><c r=\"B1\" t=\"s\"><v>1</v></c>"
          "<c r=\"C1\" t=\"s\"><v>2</v></c></row>")
ITEMS = "<si><t>BANK</t></si><si><t>IFSC</t></si><si><t>BRANCH</t></si>"


def read(path: Path, *, scan: bool) -> list[tuple[int, list[str]]]:
    with zipfile.ZipFile(path) as archive:
        strings = shared_strings(archive, scan=scan)
        return [row for _, sheet in workbook_sheets(archive)
                for row in sheet_rows(archive, sheet, strings, scan=scan)]


def both(path: Path) -> list[tuple[int, list[str]]]:
    """The rows, after checking that the scanner and ElementTree agree."""
    scanned, parsed = read(path, scan=True), read(path, scan=False)
    assert scanned == parsed
    return scanned


def test_openpyxl_workbook_matches_openpyxl(tmp_path):
    """Inline strings, sparse cells, numbers, booleans, markup characters, non-ASCII text."""
    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["BANK", "IFSC", "BRANCH", "ADDRESS", "MICR"])
    sheet.append(["STATE BANK OF INDIA", "SBIN0000691", "NEW DELHI MAIN BRANCH",
                  "11 PARLIAMENT STREET <GF> & \"A\" 'B'\nNEW DELHI", 110002002])
    sheet.append(["Bank of Baroda", "BARB0DBCHAN", None, "  Chandigarh – सेक्टर 17  ", 1.5])
    sheet["H3"] = True
    sheet.append([])
    sheet.append(["ICICI BANK LIMITED", "ICIC0000002"])
    path = tmp_path / "book.xlsx"
    workbook.save(path)
    rows = both(path)
    expected = []
    for number, values in enumerate(load_workbook(path, read_only=True).active.iter_rows(
            values_only=True), start=1):
        cells = ["" if v is None else "TRUE" if v is True else str(v) for v in values]
        while cells and cells[-1] == "":
            cells.pop()
        if cells:
            expected.append((number, cells))
    assert rows == expected
    assert rows[1][1][3] == "11 PARLIAMENT STREET <GF> & \"A\" 'B'\nNEW DELHI"
    assert rows[2][1] == ["Bank of Baroda", "BARB0DBCHAN", "", "  Chandigarh – सेक्टर 17  ", "1.5",
                          "", "", "TRUE"]


def test_excel_shapes(tmp_path):
    """Shared strings with entities, rich text, phonetic runs, `_x000D_` escapes and a
    character reference; a formula; numbers Excel writes in exponent form; an empty item."""
    items = (ITEMS + "<si><t>A &amp; B &lt;C&gt;</t></si>"          # 3
             "<si><r><rPr><b/></rPr><t>Rich </t></r><r><t xml:space=\"preserve\">text </t></r>"
             "<rPh sb=\"0\" eb=\"1\"><t>PHONETIC</t></rPh></si>"  # 4
             "<si><t>line_x000D_&#10;two</t></si>"              # 5
             "<si/>"                                               # 6
             "<si><t xml:space=\"preserve\"> padded </t></si>")   # 7
    data = (HEADER
            + "<row r=\"2\" spans=\"1:4\"><c r=\"A2\" t=\"s\"><v>3</v></c><c r=\"B2\" s=\"1\" t=\"s\">"
            "<v>4</v></c><c r=\"D2\"><v>1.10001E5</v></c></row>"
            "<row r=\"4\"><c r=\"A4\" t=\"s\"><v>5</v></c><c r=\"B4\" t=\"str\"><f>A1&amp;\"x\"</f>"
            "<v>BANKx</v></c><c r=\"C4\" t=\"s\"><v>6</v></c><c r=\"E4\" s=\"3\"/>"
            "<c r=\"F4\" t=\"b\"><v>0</v></c><c r=\"G4\"><v>-2.5</v></c></row>"
            "<row r=\"5\"><c r=\"AA5\" t=\"s\"><v>7</v></c><c r=\"AB5\" t=\"e\"><v>#N/A</v></c></row>")
    path = tmp_path / "excel.xlsx"
    bench.xlsx_package(path, data, items)
    rows = both(path)
    assert rows[0] == (1, ["BANK", "IFSC", "BRANCH"])
    assert rows[1] == (2, ["A & B <C>", "Rich text ", "", "110001"])
    assert rows[2] == (4, ["line\r\ntwo", "BANKx", "", "", "", "FALSE", "-2.5"])
    assert rows[3] == (5, [""] * 26 + [" padded ", "#N/A"])


@pytest.mark.parametrize("odd", [
    "<!-- a comment --><row r=\"2\"><c r=\"A2\" t=\"s\"><v>0</v></c></row>",
    "<row r=\"2\"><c t=\"s\"><v>0</v></c><c t=\"s\"><v>1</v></c></row>",  # no references
    "<row r=\"2\"><c r='A2' t='s'><v>0</v></c></row>",                    # single quotes
    "<row r=\"2\"><c r=\"A2\" t=\"inlineStr\"><is><t><![CDATA[SBI </c>]]></t></is></c></row>",
])
def test_what_the_scanner_does_not_follow_goes_to_the_parser(tmp_path, odd):
    path = tmp_path / "odd.xlsx"
    bench.xlsx_package(path, HEADER + odd, ITEMS)
    rows = read(path, scan=True)
    assert rows == read(path, scan=False)
    assert rows[0] == (1, ["BANK", "IFSC", "BRANCH"]) and len(rows) == 2
    assert rows[1][1][0] in {"BANK", "SBI </c>"}


def test_string_table_holds_text_compactly():
    table = StringTable()
    for text in ("SBIN", "", "सेक्टर", "A & B"):
        table.append(text)
    assert [table[i] for i in range(len(table))] == ["SBIN", "", "सेक्टर", "A & B"]
    with pytest.raises(IndexError):
        table[4]
    with pytest.raises(IndexError):
        table[-1]


def test_excel_shaped_rbi_list_imports(tmp_path):
    path = tmp_path / "68774.xlsx"
    bench.ifsc_xlsx_file(30, path)
    parsed = list(parse_ifsc_xlsx(path.read_bytes()))
    assert len(parsed) == 30 and not any(isinstance(p, BadRow) for p in parsed)
    assert parsed[0].code == "SBIN0000000" and parsed[0].city == "NEW DELHI"
    assert parsed[0].extra["address"] == "0 11 PARLIAMENT STREET, NEW DELHI 110001 & ROAD 0"
    assert parsed[0].extra["branch"] == "NEW DELHI MAIN BRANCH 0"


@pytest.mark.parametrize("data, message", [
    (HEADER + "<row r=\"2\"><c r=\"A2\" t=\"s\"><v>0</v></c></row", "cannot be read"),  # cut off
    (HEADER + "<row r=\"2\"><c r=\"B2\" t=\"s\"><v>99</v></c></row>", "shared string"),
    (HEADER + "<row r=\"2\"><c r=\"B2\" t=\"s\"><v>-1</v></c></row>", "shared string"),
    (HEADER + "<row r=\"x\"><c t=\"s\"><v>1</v></c></row>", "has the number"),
])
def test_a_damaged_sheet_stops_the_import(tmp_path, data, message):
    path = tmp_path / "bad.xlsx"
    bench.xlsx_package(path, data, ITEMS)
    with pytest.raises(ImportFormatError) as caught:
        list(parse_ifsc_xlsx(path.read_bytes()))
    assert message in str(caught.value)


def test_a_zip_that_is_no_workbook_is_an_invalid_file(tmp_path, db_url):
    path = tmp_path / "notes.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "BANK,IFSC")
    result = runner.invoke(app, ["import", str(path), "--format", "ifsc-xlsx", "--database-url",
                                 db_url, "--json"])
    out = json.loads(result.stdout)
    assert result.exit_code == 1 and out["error"]["code"] == "invalid_file"
    assert "no workbook part" in out["error"]["message"]


async def test_a_sheet_damaged_after_its_first_chunks_writes_nothing(tmp_path, db_url):
    """A shared-string reference that is not in the table, 2,600 rows in (after the first
    2,000-row chunk was written): the import is refused and rolled back whole."""
    rows = "".join(f'<row r="{n}"><c r="A{n}" t="inlineStr"><is><t>STATE BANK OF INDIA</t></is>'
                   f'</c><c r="B{n}" t="inlineStr"><is><t>SBIN0{n:06d}</t></is></c></row>'
                   for n in range(2, 2602))
    path = tmp_path / "68774.xlsx"
    bench.xlsx_package(path, HEADER + rows + '<row r="2602"><c r="A2602" t="s"><v>7</v></c></row>',
                       ITEMS)
    result = await asyncio.to_thread(runner.invoke, app, [
        "import", str(path), "--format", "ifsc-xlsx", "--database-url", db_url, "--json"])
    out = json.loads(result.stdout)
    assert result.exit_code == 1 and out["error"]["code"] == "invalid_file"
    assert "shared string" in out["error"]["message"]
    db = Database(db_url)
    try:
        async with db.session() as session:
            count = (await session.execute(select(func.count(DirectoryEntry.id)).where(
                DirectoryEntry.rail == "ifsc"))).scalar_one()
    finally:
        await db.dispose()
    assert count == 0
