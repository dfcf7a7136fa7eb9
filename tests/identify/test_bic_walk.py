"""Walk every BIC8 the server can be asked about (schwifty's registries, the curated files,
GLEIF's BIC-to-LEI file once imported) and prove each `identified` answer comes from a
BIC-keyed source, or from a registry entry that agrees with it (issue 32). Heddle ships no
GLEIF row: the walk runs on the shipped data alone and after importing the synthetic file in
fixtures/gleif."""

from __future__ import annotations

import csv
import datetime as dt

import pytest
from schwifty import registry as schwifty_registry

from heddle.identify.bics import words
from heddle.identify.rails import LookupContext
from heddle.identify.rails.swift import SwiftRail
from heddle.identify.schemas import ResultKind
from identify.conftest import FIXTURES


def _gleif_heads() -> dict[str, str]:
    """BIC8 -> legal name of the head-office rows of the imported GLEIF file, read from the
    file itself (a BIC listed under two LEIs names nobody)."""
    with (FIXTURES / "gleif" / "lei-names.csv").open(encoding="utf-8", newline="") as f:
        names = {row["LEI"]: row["Entity.LegalName"] for row in csv.DictReader(f)}
    leis: dict[str, set[str]] = {}
    with (FIXTURES / "gleif" / "lei-bic.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if len(row["BIC"]) == 8 or row["BIC"].endswith("XXX"):
                leis.setdefault(row["BIC"][:8], set()).add(row["LEI"])
    return {bic8: names[lei] for bic8, (lei, *more) in leis.items() if not more and lei in names}


def _bic_keyed(directory, imported: bool = False) -> dict[str, set[str]]:
    """BIC8 -> names the BIC-keyed sources give it, read from the files themselves."""
    keyed: dict[str, set[str]] = {}
    for bic8, institution in directory.curated.bics.items():
        keyed.setdefault(bic8, set()).add(institution.name)
    for bic8, name in (_gleif_heads() if imported else {}).items():
        keyed.setdefault(bic8, set()).add(name)
    return keyed


@pytest.mark.parametrize("imported", [False, True], ids=["shipped", "gleif-imported"])
def test_every_answered_bic8_comes_from_a_bic_keyed_source(request, imported):
    directory = request.getfixturevalue("gleif_directory" if imported else "directory")
    rail, ctx = SwiftRail(), LookupContext(directory, dt.date(2026, 11, 26))
    registry: dict[str, set[str]] = {}
    for bank in schwifty_registry.get_all_banks():
        if bank.bic:
            registry.setdefault(bank.bic[:8], set()).add(bank.name)
    keyed = _bic_keyed(directory, imported)
    walked = answered = multi_name_answered = 0
    for bic8 in sorted(set(registry) | set(keyed)):
        if not rail.looks_like(bic8, None, ctx):
            continue
        try:
            outcome = rail.lookup(rail.parse(bic8, None), None, ctx)
        except Exception:  # a registry BIC with a country schwifty rejects
            continue
        walked += 1
        if outcome.result is not ResultKind.IDENTIFIED:
            continue
        answered += 1
        assert bic8 in keyed, f"{bic8} answered from no BIC-keyed source"
        name = outcome.institution.name
        # Either a BIC-keyed source's name, or a registry entry's spelling of it (the same
        # distinctive words), never another registry entry.
        agreeing = {n for n in registry.get(bic8, ()) if any(words(n) == words(k)
                                                              for k in keyed[bic8])}
        assert name in keyed[bic8] | agreeing, (bic8, name, keyed[bic8])
        if len(registry.get(bic8, ())) > 1:
            multi_name_answered += 1
    multi_name = sum(1 for names in registry.values() if len(names) > 1)
    assert walked > 5_000 and answered >= 150 and multi_name > 200, (walked, answered, multi_name)
    # The imported head offices are answered (HDLXDEFF, HDLYGB2L, HDLZFRPP), the ambiguous and
    # unnamed ones are not.
    assert answered == len(directory.curated.bics) + (3 if imported else 0), answered
    # BIC8s whose registry entries carry several names are answered only where a BIC-keyed
    # source holds them (BSABESBB, CAIXESBB, COBADEFF, ...).
    assert multi_name_answered < multi_name, (multi_name_answered, multi_name)


def test_registry_only_bics_are_not_found_with_what_is_known(directory):
    rail, ctx = SwiftRail(), LookupContext(directory, dt.date(2026, 11, 26))
    keyed = _bic_keyed(directory)
    checked = 0
    for bank in schwifty_registry.get_all_banks():
        if not bank.bic or bank.bic[:8] in keyed or checked >= 200:
            continue
        try:
            outcome = rail.lookup(rail.parse(bank.bic, None), None, ctx)
        except Exception:
            continue
        assert outcome.result is ResultKind.NOT_FOUND and "routes payments" in outcome.detail
        checked += 1
    assert checked == 200
