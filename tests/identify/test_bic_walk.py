"""Walk every BIC8 the server can be asked about (schwifty's registries, the curated files,
GLEIF's BIC-to-LEI file) and prove each `identified` answer comes from a BIC-keyed source, or
from a registry entry that agrees with it (issue 32)."""

from __future__ import annotations

import datetime as dt
import json
from importlib import resources

from schwifty import registry as schwifty_registry

from heddle.identify.bics import words
from heddle.identify.rails import LookupContext
from heddle.identify.rails.swift import SwiftRail
from heddle.identify.schemas import ResultKind


def _bic_keyed(directory) -> dict[str, set[str]]:
    """BIC8 -> names the BIC-keyed sources give it, read from the files themselves."""
    data = json.loads(resources.files("heddle.identify").joinpath("data", "bic_lei.json")
                      .read_text(encoding="utf-8"))
    keyed: dict[str, set[str]] = {}
    for bic, lei in data["bics"].items():
        if bic.endswith("XXX"):
            keyed.setdefault(bic[:8], set()).add(data["leis"][lei])
    for bic8, institution in directory.curated.bics.items():
        keyed.setdefault(bic8, set()).add(institution.name)
    return keyed


def test_every_answered_bic8_comes_from_a_bic_keyed_source(directory):
    rail, ctx = SwiftRail(), LookupContext(directory, dt.date(2026, 11, 26))
    registry: dict[str, set[str]] = {}
    for bank in schwifty_registry.get_all_banks():
        if bank.bic:
            registry.setdefault(bank.bic[:8], set()).add(bank.name)
    keyed = _bic_keyed(directory)
    walked = answered = multi_name_answered = 0
    for bic8 in sorted(set(registry) | set(keyed)):
        if not rail.looks_like(bic8, None):
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
