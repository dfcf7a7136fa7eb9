"""`heddle identify import|coverage` on FedACH and IFSC files, on SQLite and PostgreSQL, and
the directory picking imported rows up on a running service."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy.exc import IntegrityError
from typer.testing import CliRunner

from heddle.db.base import Database
from heddle.db.migrate import upgrade
from heddle.identify.cli import app
from heddle.identify.directory import Directory
from heddle.identify.importers import DirectoryRow, ImportFormatError, parse_fedach, parse_ifsc_csv
from heddle.identify.importers.store import upsert_rows
from heddle.identify.names import NameResolverRegistry
from heddle.identify.schemas import IdentifyRequest, Rail
from heddle.identify.service import IdentifyService

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def cli(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, [*args, "--json"])
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout  # exactly one JSON object
    return result.exit_code, json.loads(lines[0])


def fedach_line(
    routing="021000021",
    office="O",
    record_type="1",
    change="081720",
    new="000000000",
    name="JPMORGAN CHASE BANK, NA",
    city="HOUSTON",
    state="TX",
    zip_code="77252",
) -> str:
    line = (
        routing
        + office
        + "021001208"
        + record_type
        + change
        + new
        + name.ljust(36)
        + "PO BOX 2558".ljust(36)
        + city.ljust(20)
        + state
        + zip_code
        + "2558"
        + "8004662002"
        + "11"
    )
    assert len(line) == 150
    return line + "     "


def test_fedach_import_and_reimport(db_url):
    code, out = cli("import", str(FIXTURES / "fedach_sample.txt"), "--format", "fedach", "--database-url", db_url)
    assert code == 0
    assert out == {
        "format": "fedach",
        "rail": "routing_number",
        "rows": 5,
        "inserted": 5,
        "updated": 0,
        "bad_rows": 0,
        "bad_row_examples": [],
    }
    code, out = cli("import", str(FIXTURES / "fedach_sample.txt"), "--format", "fedach", "--database-url", db_url)
    assert (code, out["inserted"], out["updated"]) == (0, 0, 5)


def test_ifsc_imports_both_header_variants(db_url):
    code, out = cli(
        "import", str(FIXTURES / "ifsc_razorpay_sample.csv"), "--format", "ifsc-csv", "--database-url", db_url
    )
    assert (code, out["rows"], out["inserted"]) == (0, 4, 4)
    code, out = cli("import", str(FIXTURES / "ifsc_rbi_sample.csv"), "--format", "ifsc-csv", "--database-url", db_url)
    assert (code, out["rows"], out["inserted"]) == (0, 3, 3)
    code, out = cli("coverage", "--database-url", db_url)
    assert code == 0 and out["rails"]["ifsc"]["imported"] == 7
    assert out["rails"]["routing_number"]["curated"] == 30
    assert out["rails"]["routing_number"]["imported"] == 0
    assert out["rails"]["iban"]["curated"] > 10_000 and out["curated_as_of"]["sepa"]
    # Each rail beside its official directory; every shipped file with source and licence.
    assert out["rails"]["ifsc"]["official"]["size"] == 182_295
    assert out["rails"]["ifsc"]["institutions"] >= 1400
    assert out["rails"]["nuban"]["codes"] >= 290
    assert out["rails"]["sort_code"]["ranges"] > 0 and out["rails"]["sort_code"]["official"]["size"] is None
    files = {f["file"]: f for f in out["files"]}
    assert files["ifsc_razorpay.json"]["licence"].startswith("MIT")
    assert files["ng_nip_codes.json"]["sources"] and files["uk_modulus.json"]["as_of"]
    # A file older than its source's update cycle is flagged (VocaLink's 2017 tables).
    assert files["uk_modulus.json"]["stale"] and "uk_modulus.json" in out["stale"]
    assert files["ifsc_branches.json.gz"]["licence"].startswith("MIT")
    # IFSCs answered with their branch, city and rails, and the date of that part.
    assert out["rails"]["ifsc"]["branch_details"] == 176_282
    assert out["rails"]["swift"]["branch_details"] == 0
    assert files["ifsc_branches.json.gz"]["details_as_of"] == "2026-03-21"


@pytest.mark.parametrize(
    "content, fragment",
    [
        (fedach_line(routing="021000022"), "routing number 021000022 fails the ABA check digit"),
        (fedach_line(office="X"), "office code"),
        (fedach_line(record_type="7"), "record type"),
        (fedach_line(change="133120"), "change date"),
        (fedach_line(record_type="2"), "record type 2 needs a valid new routing number"),
        (fedach_line(name=""), "customer name is empty"),
        (fedach_line(state="T1"), "state code"),
        (fedach_line(zip_code="7725A"), "zip code"),
        (fedach_line()[:140], "a FedACH record is 155 characters"),
        (fedach_line() + "EXTRA", "a FedACH record is 155 characters"),
        (fedach_line(routing="026009593"), "routing number 026009593 already appears on line 1"),
        ("BANCO ESPAÑOL", "not ASCII text"),
    ],
)
def test_fedach_bad_line_is_skipped_and_reported(tmp_path, sqlite_url, content, fragment):
    path = tmp_path / "FedACHdir.txt"
    path.write_bytes(
        (fedach_line(routing="026009593", name="BANK OF AMERICA, N.A.") + "\n" + content + "\n").encode("latin-1")
    )
    # Past the threshold (here: no bad row allowed) nothing is written ...
    code, out = cli("import", str(path), "--format", "fedach", "--max-bad-rows", "0", "--database-url", sqlite_url)
    assert code == 1 and out["error"]["code"] == "too_many_bad_rows"
    assert out["error"]["details"]["examples"][0]["line"] == 2
    assert fragment in out["error"]["details"]["examples"][0]["message"]
    code, out = cli("coverage", "--database-url", sqlite_url)
    assert out["rails"]["routing_number"]["imported"] == 0
    # ... and under it the good rows are written and the bad one reported.
    code, out = cli("import", str(path), "--format", "fedach", "--database-url", sqlite_url)
    assert code == 0 and (out["rows"], out["bad_rows"]) == (1, 1)
    assert out["bad_row_examples"][0]["line"] == 2
    assert fragment in out["bad_row_examples"][0]["message"]


def test_four_bad_rows_do_not_refuse_eighteen_thousand_good_ones(tmp_path, sqlite_url):
    good = (FIXTURES / "fedach_real_extract.txt").read_text().splitlines()
    lines = good + [
        fedach_line(name=""),
        fedach_line(routing="021000022"),
        fedach_line(state="T1"),
        fedach_line(office="X"),
    ]
    path = tmp_path / "FedACHdir.txt"
    path.write_text("\n".join(lines) + "\n")
    code, out = cli("import", str(path), "--format", "fedach", "--database-url", sqlite_url)
    assert code == 0 and out["rows"] == len(good) and out["bad_rows"] == 4


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("BANK,IFSC\nState Bank of India,SBIN000030\n", "'SBIN000030' is not an IFSC"),
        ("BANK,IFSC\n,SBIN0000300\n", "BANK is empty"),
        ("BANK,IFSC,SWIFT\nSBI,SBIN0000300,NOT-A-BIC\n", "SWIFT 'NOT-A-BIC' is not a BIC"),
        ("BANK,IFSC,NEFT\nSBI,SBIN0000300,maybe\n", "NEFT must be true or false"),
        ("BANK,IFSC\nSBI,SBIN0000300\nSBI,sbin0000300\n", "IFSC SBIN0000300 already appears on line 2"),
        ("BANK,IFSC\nSBI,SBIN0000300,extra\n", "expected 2 fields, got 3"),
        ("BANK,IFSC,CITY\nSBI,SBIN0000300," + "M" * 200 + "\n", "CITY is longer than 120"),
    ],
)
def test_ifsc_bad_rows_are_reported(tmp_path, sqlite_url, content, fragment):
    path = tmp_path / "ifsc.csv"
    path.write_bytes(content.encode())
    code, out = cli("import", str(path), "--format", "ifsc-csv", "--max-bad-rows", "0", "--database-url", sqlite_url)
    assert code == 1 and out["error"]["code"] == "too_many_bad_rows"
    assert fragment in out["error"]["details"]["examples"][0]["message"], out


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("BANKNAME,CODE\nSBI,SBIN0000300\n", "line 1: the header must name the BANK and IFSC columns"),
        ("BANK,IFSC\n", "the file holds no usable rows"),
        ("", "the file is empty"),
        ('BANK,IFSC\nSBI,"' + "A" * 200_000 + '"\n', "line 2: unreadable CSV: field larger than field limit"),
    ],
)
def test_ifsc_unusable_files(tmp_path, sqlite_url, content, fragment):
    path = tmp_path / "ifsc.csv"
    path.write_bytes(content.encode())
    code, out = cli("import", str(path), "--format", "ifsc-csv", "--database-url", sqlite_url)
    assert code == 1 and out["error"]["code"] == "invalid_file"
    assert fragment in out["error"]["message"], out


def test_missing_files_and_unknown_formats(tmp_path, sqlite_url):
    code, out = cli("import", str(tmp_path / "missing.txt"), "--format", "fedach")
    assert code == 1 and out["error"]["code"] == "unreadable_file"
    result = runner.invoke(app, ["import", str(tmp_path), "--format", "swift-xml"])
    assert result.exit_code == 2  # usage error from the CLI parser


def test_text_output_without_json(sqlite_url):
    result = runner.invoke(
        app, ["import", str(FIXTURES / "fedach_sample.txt"), "--format", "fedach", "--database-url", sqlite_url]
    )
    assert result.exit_code == 0
    assert "Imported 5 routing_number rows (5 new, 0 updated); 0 bad rows skipped." in result.stdout


async def test_a_failing_batch_writes_nothing(db_url):
    await upgrade(db_url)
    db = Database(db_url)
    try:
        good = [
            DirectoryRow(rail="routing_number", code=f"{n:09d}", name="BANK", type="bank", country="US", source="test")
            for n in range(2500)
        ]
        broken = DirectoryRow(
            rail="routing_number", code="999999999", name=None, type="bank", country="US", source="test"
        )
        with pytest.raises(IntegrityError):  # NOT NULL name, in the second 2000-row chunk
            await upsert_rows(db, [*good, broken])
        directory = Directory()
        assert await directory.refresh(db) == 0
    finally:
        await db.dispose()


class Ticks:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


async def test_running_service_picks_up_imports(db_url):
    await upgrade(db_url)
    db = Database(db_url)
    ticks = Ticks()
    directory = Directory(monotonic=ticks)
    service = IdentifyService(directory, NameResolverRegistry(), db=db, refresh_interval_s=5)
    try:
        before = await service.identify(IdentifyRequest(identifier="011104050"))
        assert before.result.value == "not_found"

        await upsert_rows(db, parse_fedach((FIXTURES / "fedach_sample.txt").read_bytes()))
        ticks.now += 1  # within the interval: no check yet
        assert (await service.identify(IdentifyRequest(identifier="011104050"))).result.value == "not_found"
        ticks.now += 5
        after = (await service.identify(IdentifyRequest(identifier="011104050"))).to_dict()
        assert after["result"] == "identified"
        assert after["institution"]["name"] == "WEBSTER BANK"
        assert after["institution"]["address"] == {"city": "NEW BRITAIN", "country": "US"}
        assert after["reachable_rails"] == ["ach"]

        # Imported rows win for name and city; curated rails and type are kept.
        chase = (await service.identify(IdentifyRequest(identifier="021000021"))).to_dict()
        assert chase["institution"]["name"] == "JPMORGAN CHASE BANK, NA"
        assert chase["institution"]["type"] == "bank"
        assert chase["reachable_rails"] == ["ach", "wire", "rtp", "fednow"]
        moved = (await service.identify(IdentifyRequest(identifier="053112495"))).to_dict()
        assert moved["detail"] == "FedACH routes items for this routing number to 053112330."

        ticks.now += 10  # nothing changed: the cheap query does not re-read the rows
        assert not await directory.refresh_if_stale(db, 5)

        await upsert_rows(db, parse_ifsc_csv((FIXTURES / "ifsc_razorpay_sample.csv").read_bytes()))
        ticks.now += 10
        kotak = (await service.identify(IdentifyRequest(identifier="KKBK0000958"))).to_dict()
        # Per-branch flags are complete: the branch is not on RTGS although the bank is.
        assert kotak["reachable_rails"] == ["neft", "imps", "upi"]
        assert kotak["institution"]["bic"] == "KKBKINBB" and kotak["institution"]["address"]["city"] == "MUMBAI"
        # An imported row's branch wins over the shipped one ("MUMBAI MAIN" in the package).
        sbi = (await service.identify(IdentifyRequest(identifier="SBIN0000300"))).to_dict()
        assert sbi["institution"]["branch"] == "MUMBAI MAIN BRANCH"
        assert sbi["institution"]["address"]["city"] == "MUMBAI"
        unknown_bank = (await service.identify(IdentifyRequest(identifier="XCOB0000001"))).to_dict()
        assert unknown_bank["result"] == "identified" and unknown_bank["reachable_rails"] == ["neft"]
        assert directory.imported_count(Rail.IFSC) == 4
    finally:
        await db.dispose()


async def test_files_without_usable_rows_write_nothing(sqlite_url):
    await upgrade(sqlite_url)
    db = Database(sqlite_url)
    try:
        with pytest.raises(ImportFormatError, match="no usable rows"):
            await upsert_rows(db, parse_fedach(b"\n\n"))
        with pytest.raises(ImportFormatError, match="empty"):
            await upsert_rows(db, parse_ifsc_csv(b""))
    finally:
        await db.dispose()


async def test_concurrent_refreshes_do_not_queue(sqlite_url):
    await upgrade(sqlite_url)
    db = Database(sqlite_url)
    try:
        await upsert_rows(db, parse_fedach((FIXTURES / "fedach_sample.txt").read_bytes()))
        directory = Directory()
        first, second = await asyncio.gather(directory.refresh_if_stale(db, 0), directory.refresh_if_stale(db, 0))
        # One caller reloads; the other answers from the rows it has instead of waiting.
        assert sorted([first, second]) == [False, True]
        assert directory.imported_count(Rail.ROUTING_NUMBER) == 5
        directory.warm_up()
    finally:
        await db.dispose()
