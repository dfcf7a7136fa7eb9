"""One import per official format, each from a small real extract (see fixtures/README.md),
then the lookups that the imported rows change."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path

import pytest
from openpyxl import Workbook
from typer.testing import CliRunner

from heddle.db.base import Database
from heddle.identify.cli import app
from heddle.identify.directory import Directory
from heddle.identify.names import NameResolverRegistry
from heddle.identify.schemas import IdentifyRequest, IdentifyResult
from heddle.identify.service import IdentifyService

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


async def load(path: Path, fmt: str, url: str, *extra: str) -> dict:
    # The command runs its own event loop (asyncio.run), so it runs on a thread here.
    result = await asyncio.to_thread(
        runner.invoke, app, ["import", str(path), "--format", fmt, "--database-url", url,
                             "--json", *extra])
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.exit_code == 0, out
    return out


@pytest.fixture
async def lookup_in(db_url):
    """`await lookup_in(identifier=...)` against the directory the imports wrote."""
    db = Database(db_url)
    service = IdentifyService(Directory(), NameResolverRegistry(), db=db, refresh_interval_s=0)

    async def run(**body) -> dict:
        return (await service.identify(IdentifyRequest(**body))).to_dict()

    yield run
    await db.dispose()


async def test_fedach_fixed_width_with_fedglobal_rows(db_url, lookup_in):
    out = await load(FIXTURES / "fedach_real_extract.txt", "fedach", db_url)
    assert (out["rows"], out["bad_rows"]) == (13, 0)
    nova_scotia = await lookup_in(identifier="091050234")
    assert nova_scotia["result"] == "identified"
    assert nova_scotia["institution"]["name"] == "THE BANK OF NOVA SCOTIA"
    # FedGlobal: a foreign institution whose country the directory does not give.
    assert "country" not in nova_scotia and "FedGlobal" in nova_scotia["detail"]
    assert nova_scotia["reachable_rails"] == ["ach"]
    # The response's read model takes it (no address country to claim).
    assert IdentifyResult.model_validate(nova_scotia).institution.name == "THE BANK OF NOVA SCOTIA"
    webster = await lookup_in(identifier="011104050")
    assert webster["institution"]["address"] == {"city": "NEW BRITAIN", "country": "US"}


async def test_fedach_json(db_url, lookup_in):
    out = await load(FIXTURES / "fedach_real_extract.json", "fedach", db_url)
    assert (out["rows"], out["bad_rows"]) == (6, 0)
    frb = await lookup_in(identifier="011000015")
    assert frb["institution"]["name"] == "FEDERAL RESERVE BANK"
    assert frb["institution"]["type"] == "central_bank"


@pytest.mark.parametrize("fedwire, rows", [("fedwire_real_extract.txt", 9),
                                           ("fedwire_real_extract.json", 10)])
async def test_fedwire_gives_wire_reachability_from_data(db_url, lookup_in, fedwire, rows):
    await load(FIXTURES / "fedach_real_extract.txt", "fedach", db_url)
    before = await lookup_in(identifier="011000015")
    assert before["reachable_rails"] == ["ach"]
    out = await load(FIXTURES / fedwire, "fedwire", db_url)
    assert out["bad_rows"] == 0 and out["rows"] == rows
    after = await lookup_in(identifier="011000015")
    # FedACH's description and `ach` stay; Fedwire adds `wire`.
    assert after["institution"]["name"] == "FEDERAL RESERVE BANK"
    assert after["reachable_rails"] == ["ach", "wire"]
    if fedwire.endswith(".txt"):  # the JSON extract has no such participants
        # Not eligible for funds transfers (N) or settlement-only (S): no `wire`.
        not_eligible = await lookup_in(identifier="011600567")
        assert not_eligible["result"] == "identified" and "reachable_rails" not in not_eligible
        settlement_only = await lookup_in(identifier="021203970")
        assert "reachable_rails" not in settlement_only
    # Re-importing FedACH keeps Fedwire's `wire`.
    await load(FIXTURES / "fedach_real_extract.txt", "fedach", db_url)
    assert (await lookup_in(identifier="011000015"))["reachable_rails"] == ["ach", "wire"]


def rbi_workbook(tmp_path: Path) -> Path:
    """The RBI list's rows (fixtures/ifsc_rbi_sample.csv) in the XLSX the RBI publishes, with
    the blank trailing cells spreadsheets carry and one bad row."""
    rows = list(csv.reader(io.StringIO((FIXTURES / "ifsc_rbi_sample.csv").read_text())))
    workbook = Workbook()
    sheet = workbook.active
    for row in rows:
        sheet.append(row)
    sheet.append(["STATE BANK OF INDIA", "SBIN00003", "BAD ROW"])
    path = tmp_path / "68774.xlsx"
    workbook.save(path)
    return path


async def test_rbi_xlsx(tmp_path, db_url, lookup_in):
    out = await load(rbi_workbook(tmp_path), "ifsc-xlsx", db_url)
    assert (out["format"], out["rows"], out["bad_rows"]) == ("ifsc-xlsx", 3, 1)
    assert "is not an IFSC" in out["bad_row_examples"][0]["message"]
    sbi = await lookup_in(identifier="SBIN0000691")
    assert sbi["institution"]["address"]["city"] == "NEW DELHI"
    assert sbi["institution"]["name"] == "STATE BANK OF INDIA"


def test_xlsx_that_is_not_a_workbook(tmp_path, db_url):
    path = tmp_path / "fake.xlsx"
    path.write_bytes(b"BANK,IFSC\nSBI,SBIN0000300\n")
    result = runner.invoke(app, ["import", str(path), "--format", "ifsc-xlsx", "--database-url",
                                 db_url, "--json"])
    out = json.loads(result.stdout)
    assert result.exit_code == 1 and out["error"]["code"] == "invalid_file"


async def test_razorpay_csv_sub_member_row_names_its_holder(tmp_path, db_url, lookup_in):
    path = tmp_path / "IFSC.csv"
    header = (FIXTURES / "ifsc_razorpay_sample.csv").read_text().splitlines()[0]
    # The RBI list files a sub-member code under its sponsor; the sub-member map names the holder.
    path.write_text(header + "\nHDFC Bank,HDFC0CKUB01,KHAMGAON URBAN CO-OP BANK,KHAMGAON,"
                             "BULDHANA,MAHARASHTRA,\"KHAMGAON\",,true,true,KHAMGAON,IN-MH,true,,"
                             "true,\n")
    await load(path, "ifsc-csv", db_url)
    data = await lookup_in(identifier="HDFC0CKUB01")
    assert data["institution"]["name"] == "Khamgaon Urban Co-operative Bank"
    assert data["institution"]["address"]["city"] == "KHAMGAON"


async def test_eiscd_style_file_identifies_codes_inside_clearing_ranges(db_url, lookup_in):
    assert (await lookup_in(identifier="60-84-07", rail="sort_code"))["result"] == "not_found"
    out = await load(FIXTURES / "eiscd_style_sample.csv", "eiscd", db_url)
    assert (out["rail"], out["rows"], out["bad_rows"]) == ("sort_code", 4, 0)
    chase = await lookup_in(identifier="60-84-07", rail="sort_code")
    assert chase["result"] == "identified"
    assert chase["institution"]["name"] == "J.P. MORGAN EUROPE LIMITED"
    assert chase["institution"]["bic"] == "CHASGB2L"
    assert chase["reachable_rails"] == ["fps", "bacs"]  # per-code flags: not on CHAPS
    triodos = await lookup_in(identifier="165810", rail="sort_code")
    assert triodos["institution"]["name"] == "TRIODOS BANK UK LIMITED"
    # A curated single code keeps its type; the directory does not say which kind.
    starling = await lookup_in(identifier="608371", rail="sort_code")
    assert starling["institution"]["type"] == "bank"


@pytest.mark.parametrize("row, fragment", [
    ("60-84-0,,X,BANK,LONDON,M,M,M", "is not a sort code"),
    ("608407,,X,,LONDON,M,M,M", "owning bank name is empty"),
    ("608407,,X,BANK,LONDON,Q,M,M", "FPS status must be"),
    ("608407,BAD,X,BANK,LONDON,M,M,M", "is not a BIC"),
])
def test_eiscd_bad_rows(tmp_path, db_url, row, fragment):
    header = (FIXTURES / "eiscd_style_sample.csv").read_text().splitlines()[0]
    path = tmp_path / "eiscd.csv"
    path.write_text(f"{header}\n{row}\n")
    result = runner.invoke(app, ["import", str(path), "--format", "eiscd", "--database-url",
                                 db_url, "--json", "--max-bad-rows", "0"])
    out = json.loads(result.stdout)
    assert out["error"]["code"] == "too_many_bad_rows"
    assert fragment in out["error"]["details"]["examples"][0]["message"]


async def test_imported_rbi_row_of_a_leased_looking_code_is_not_billed_as_the_sponsor(
        tmp_path, db_url, lookup_in):
    # The RBI list files sub-member codes under the sponsor: HDFC0CADRSH is listed as HDFC
    # Bank's, but HDFC leases lettered codes like it and no sub-member list names its holder.
    path = tmp_path / "rbi.csv"
    path.write_text("BANK,IFSC,BRANCH,CITY1\nHDFC BANK,HDFC0CADRSH,ADARSH CO-OP BANK,MUMBAI\n"
                    "HDFC BANK,HDFC0000001,SANDOZ HOUSE,MUMBAI\n")
    await load(path, "ifsc-csv", db_url)
    leased = await lookup_in(identifier="HDFC0CADRSH")
    assert leased["result"] == "not_found" and "ADARSH CO-OP BANK" in leased["detail"]
    own = await lookup_in(identifier="HDFC0000001")
    assert own["result"] == "identified" and own["institution"]["address"]["city"] == "MUMBAI"


async def test_ten_digit_natwest_numbers_are_checked_once_the_holder_is_known(tmp_path, db_url,
                                                                               lookup_in):
    """VocaLink's ten-digit rule names NatWest, not sort codes: inside NatWest's clearing range
    a ten-digit number that fails is not refused (the code may be an agency bank's); once an
    EISCD row names NatWest as the holder, it is. 60-16-13 31926819 is the IBAN registry's UK
    example (GB29 NWBK 6016 1331 9268 19); the ten-digit forms add NatWest's two-digit prefix."""
    from heddle.errors import HeddleError

    in_range = await lookup_in(identifier="60-16-13", rail="sort_code",
                               account_number="12-31926818")
    assert in_range["result"] == "not_found" and "National Westminster" in in_range["detail"]
    header = (FIXTURES / "eiscd_style_sample.csv").read_text().splitlines()[0]
    path = tmp_path / "eiscd.csv"
    path.write_text(header + "\n60-16-13,NWBKGB2L,OXFORD,NATIONAL WESTMINSTER BANK PLC,OXFORD,"
                             "A,A,A\n")
    await load(path, "eiscd", db_url)
    good = await lookup_in(identifier="60-16-13", rail="sort_code", account_number="12-31926819")
    assert good["result"] == "identified"
    assert good["institution"]["name"] == "NATIONAL WESTMINSTER BANK PLC"
    assert good["account"]["number"] == "12-31926819"
    with pytest.raises(HeddleError) as caught:
        await lookup_in(identifier="60-16-13", rail="sort_code", account_number="12-31926818")
    assert caught.value.code == "invalid_identifier"
    assert caught.value.details["field"] == "account_number"
    # An agency bank's code inside NatWest's range: its ten-digit number is not NatWest's form.
    await load(FIXTURES / "eiscd_style_sample.csv", "eiscd", db_url)
    chase = await lookup_in(identifier="60-84-07", rail="sort_code", account_number="1231926818")
    assert chase["result"] == "identified"
    assert chase["institution"]["name"] == "J.P. MORGAN EUROPE LIMITED"
