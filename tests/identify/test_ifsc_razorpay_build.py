"""`ifsc_razorpay.json` is built from a published package (Razorpay's `ifsc` on npm), not
copied from a repository: the builder maps Razorpay's files as the shipped file says, and the
shipped file names the package it came from."""

from __future__ import annotations

import datetime as dt
import json
from importlib import resources

import pytest
from pydantic import ValidationError

from heddle.identify.importers import ifsc_razorpay

# The shapes of package/src/*.json in ifsc 2.0.50, with real rows of it.
SRC = {
    "banknames.json": {
        "AKJB": "Akola Janata Commercial Co-operative Bank",
        "SBIN": "State Bank of India",
        "FINF": "Fincare Small Finance Bank ",
        "PUSD": "Pusad Urban Co-operative Bank",
    },
    "banks.json": {
        "AKJB": {"code": "AKJB", "type": "O-UCB", "upi": True},
        "SBIN": {"code": "SBIN", "type": "PSB", "upi": True},
        "FINF": {"code": "FINF", "type": "SFB"},
    },
    "IFSC.json": {"SBIN": [300], "PUSD": [23]},
    "sublet.json": {"AKJB0000001": "AKJB"},
    "custom-sublets.json": {"YESB0SPC": "Shahada Peoples Co-operative Bank"},
}


def test_build_maps_types_rails_and_sub_members():
    data = ifsc_razorpay.build(SRC, version="2.0.50", as_of=dt.date(2026, 8, 24))
    by_code = {e["prefix"]: e for e in data["entries"]}
    assert by_code["SBIN"] == {
        "prefix": "SBIN",
        "name": "State Bank of India",
        "type": "bank",
        "reachable_rails": ["neft", "upi"],
    }
    assert by_code["AKJB"]["type"] == "urban_cooperative_bank"
    assert by_code["AKJB"]["reachable_rails"] == ["upi"]  # no branches in RBI's list
    assert by_code["FINF"]["name"] == "Fincare Small Finance Bank"  # trailing space dropped
    assert by_code["PUSD"] == {
        "prefix": "PUSD",
        "name": "Pusad Urban Co-operative Bank",
        "type": "financial_institution",  # Razorpay gives no type
        "reachable_rails": ["neft"],
    }
    assert data["sublets"] == {"AKJB0000001": "AKJB"}
    assert data["sublet_prefixes"] == {"YESB0SPC": "Shahada Peoples Co-operative Bank"}
    assert data["sources"][0].startswith("ifsc 2.0.50 (npm registry package by Razorpay)")


def test_unknown_bank_type_and_malformed_codes_stop_the_build():
    with pytest.raises(ValueError, match="unknown Razorpay bank type 'XYZ'"):
        ifsc_razorpay.build({**SRC, "banks.json": {"SBIN": {"type": "XYZ"}}}, version="x", as_of=dt.date(2026, 1, 1))
    with pytest.raises(ValidationError):
        ifsc_razorpay.build({**SRC, "sublet.json": {"AKJB000001": "AKJB"}}, version="x", as_of=dt.date(2026, 1, 1))


def test_command_writes_a_file_the_loader_reads(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    for name, content in SRC.items():
        (src / name).write_text(json.dumps(content))
    out = tmp_path / "ifsc_razorpay.json"
    args = ["--src", str(src), "--version", "2.0.50", "--as-of", "2026-08-24", "--out", str(out)]
    assert ifsc_razorpay.main(args) == 0
    assert "4 bank codes, 1 sub-member IFSCs, 1 leased prefixes written" in capsys.readouterr().out
    written = json.loads(out.read_text())
    assert written == ifsc_razorpay.build(SRC, version="2.0.50", as_of=dt.date(2026, 8, 24))


def test_shipped_file_comes_from_the_npm_package():
    text = resources.files("heddle.identify").joinpath("data", "ifsc_razorpay.json").read_text()
    data = json.loads(text)
    assert data["as_of"] == "2026-08-24"
    assert data["sources"][0].startswith("ifsc 2.0.50 (npm registry package by Razorpay)")
    assert "GitHub" not in " ".join(data["sources"])
    assert len(data["entries"]) == 1510 and len(data["sublets"]) == 1158
