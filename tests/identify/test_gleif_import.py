"""`heddle identify import --format gleif-bic-lei`: GLEIF's BIC-to-LEI file, named from its LEI
records, into `identify_directory`, and the swift rail answering from it once imported.

The files in fixtures/gleif are synthetic (invented BICs and LEIs, see their README) in GLEIF's
column layout; Heddle ships no row of GLEIF's file.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from heddle.db.base import Database
from heddle.identify.cli import app
from heddle.identify.directory import Directory
from heddle.identify.importers.gleif import lei_check_digits_ok
from heddle.identify.rails import LookupContext
from heddle.identify.rails.swift import SwiftRail
from heddle.identify.schemas import Rail, ResultKind

GLEIF = Path(__file__).parent / "fixtures" / "gleif"
BIC_LEI, NAMES = GLEIF / "lei-bic.csv", GLEIF / "lei-names.csv"
runner = CliRunner()


def cli(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, [*args, "--json"])
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    return result.exit_code, json.loads(lines[0])


def gleif_import(db_url: str, *extra: str, names: Path = NAMES) -> tuple[int, dict]:
    return cli(
        "import", str(BIC_LEI), "--format", "gleif-bic-lei", "--names", str(names), "--database-url", db_url, *extra
    )


def test_fixture_is_in_gleifs_layout_with_well_formed_invented_codes():
    with BIC_LEI.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["LEI", "BIC"]
    with NAMES.open(encoding="utf-8", newline="") as f:
        names = list(csv.reader(f))
    assert names[0][:2] == ["LEI", "Entity.LegalName"]
    # Every LEI but the one row kept to test the check is valid under ISO 17442 (mod 97-10).
    leis = {lei for lei, _ in rows[1:]} | {row[0] for row in names[1:]}
    assert sorted(lei for lei in leis if not lei_check_digits_ok(lei)) == ["HEDD00INVENTED000734"]
    assert all(lei.startswith("HEDD00INVENTED") for lei in leis)


def test_lei_check_digits():
    assert lei_check_digits_ok("HEDD00INVENTED000151")
    assert not lei_check_digits_ok("HEDD00INVENTED000152")  # one check digit off
    assert not lei_check_digits_ok("HEDD00INVENTED0001AB")  # check digits are digits
    assert not lei_check_digits_ok("HEDD00INVENTED00015")  # 19 characters


def test_import_reports_every_row_it_cannot_use(db_url):
    code, out = gleif_import(db_url)
    assert code == 0, out
    assert (out["rail"], out["rows"], out["inserted"], out["updated"]) == ("swift", 5, 5, 0)
    messages = {b["line"]: b["message"] for b in out["bad_row_examples"]}
    assert out["bad_rows"] == len(messages) == 5
    assert "HDLWNL2AXXX is listed under 2 LEIs" in messages[7] and "HDLWNL2AXXX" in messages[8]
    assert "has no legal name" in messages[9]
    assert "not an LEI" in messages[10] and "not a BIC" in messages[11]
    # A monthly re-import updates the same rows.
    code, out = gleif_import(db_url)
    assert (code, out["inserted"], out["updated"]) == (0, 0, 5)
    code, out = cli("coverage", "--database-url", db_url)
    assert out["rails"]["swift"]["bic_lei"] == {"shipped": 0, "imported": 5}
    assert out["rails"]["swift"]["imported"] == 5


def test_names_from_gleifs_zipped_golden_copy(tmp_path, sqlite_url):
    archive = tmp_path / "LEI-CDF.csv.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(NAMES, "20261101-gleif-concatenated-file-lei2.csv")
    code, out = gleif_import(sqlite_url, names=archive)
    assert (code, out["rows"], out["bad_rows"]) == (0, 5, 5)


@pytest.mark.parametrize(
    "args, error",
    [
        (["--format", "gleif-bic-lei"], "invalid_arguments"),  # no --names
        (["--format", "fedach", "--names", str(NAMES)], "invalid_arguments"),
        (["--format", "gleif-bic-lei", "--names", "missing.csv"], "unreadable_file"),
    ],
)
def test_names_goes_with_the_gleif_format_only(sqlite_url, args, error):
    code, out = cli("import", str(BIC_LEI), *args, "--database-url", sqlite_url)
    assert code == 1 and out["error"]["code"] == error


@pytest.mark.parametrize(
    "name, content, fragment",
    [
        ("names.csv", "LEI,Name\nHEDD00INVENTED000151,X\n", "Entity.LegalName"),
        ("names.csv", "LEI,Entity.LegalName\nHEDD00INVENTED000151,Caf\xe9\n", "not UTF-8"),
        ("names.zip", None, "holds no CSV"),
    ],
)
def test_unusable_names_file_writes_nothing(tmp_path, sqlite_url, name, content, fragment):
    path = tmp_path / name
    if content is None:
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("README.txt", "no csv here")
    else:
        path.write_bytes(content.encode("latin-1"))
    code, out = gleif_import(sqlite_url, names=path)
    assert code == 1 and out["error"]["code"] == "invalid_file" and fragment in out["error"]["message"]
    assert cli("coverage", "--database-url", sqlite_url)[1]["rails"]["swift"]["imported"] == 0


def test_relationship_file_without_its_header_is_refused(tmp_path, sqlite_url):
    path = tmp_path / "lei-bic.csv"
    path.write_text("HEDD00INVENTED000151,HDLXDEFFXXX\n")
    code, out = cli(
        "import", str(path), "--format", "gleif-bic-lei", "--names", str(NAMES), "--database-url", sqlite_url
    )
    assert code == 1 and out["error"]["code"] == "invalid_file" and "LEI and BIC" in out["error"]["message"]


def test_too_many_bad_rows_writes_nothing(sqlite_url):
    code, out = gleif_import(sqlite_url, "--max-bad-rows", "4")
    assert code == 1 and out["error"]["code"] == "too_many_bad_rows"
    assert cli("coverage", "--database-url", sqlite_url)[1]["rails"]["swift"]["imported"] == 0


async def _refresh(directory: Directory, db_url: str) -> int:
    db = Database(db_url)
    try:
        return await directory.refresh(db)
    finally:
        await db.dispose()


def test_swift_rail_answers_from_imported_rows_only(db_url):
    rail = SwiftRail()
    directory = Directory()

    def ask(bic: str):
        return rail.lookup(rail.parse(bic, None), None, LookupContext(directory, dt.date(2026, 11, 26)))

    # Before the import nothing names these BICs.
    assert ask("HDLXDEFF").result is ResultKind.NOT_FOUND
    assert gleif_import(db_url)[0] == 0
    assert asyncio.run(_refresh(directory, db_url)) == 5
    assert directory.imported_count(Rail.SWIFT) == 5
    head = ask("HDLXDEFF")
    assert head.result is ResultKind.IDENTIFIED
    assert (head.institution.name, head.institution.code, head.institution.country) == (
        "HEDDLE TEST BANK AKTIENGESELLSCHAFT",
        "HDLXDEFF",
        "DE",
    )
    # A branch code listed with another LEI names that institution; an unlisted one is a
    # branch of the BIC8's institution (ISO 9362).
    assert ask("HDLXDEFF200").institution.name == "Heddle Test Sparkasse Nord"
    assert ask("HDLXDEFF100").institution.name == "HEDDLE TEST BANK AKTIENGESELLSCHAFT"
    assert ask("HDLXDEFF300").institution.code == "HDLXDEFF300"
    assert ask("HDLXDEFF300").institution.name == "HEDDLE TEST BANK AKTIENGESELLSCHAFT"
    # Typed by the legal name; a BIC8 row stands for its head office.
    assert ask("HDLYGB2L").institution.type == "building_society"
    assert ask("HDLZFRPPXXX").institution.name == "Banque Heddle d'Essai SA"
    # A BIC under two LEIs, or whose LEI has no name, names nobody.
    for bic in ("HDLWNL2A", "HDLVESMM", "HDLUITMM"):
        outcome = ask(bic)
        assert outcome.result is ResultKind.NOT_FOUND and outcome.institution is None, bic
