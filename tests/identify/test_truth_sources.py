"""Identify never names the wrong bank (issue 32): one test per failure class, on real
identifiers from public sources.

Sources: the banks' published BICs (Société Générale SOGEFRPP, Banco Sabadell BSABESBB,
CaixaBank CAIXESBB, Deutsche Bank DEUTDEFF, BNP Paribas BNPAFRPP, First Abu Dhabi Bank
NBADAEAA); the Bundesbank's bank-code list (SOLADES1ULM, Sparkasse Ulm's BIC); schwifty's
registries (ES bank code 0209, Abbey National, under BSABESBB; FR 30003 under SOGEFRPP); RBI's
IFSC list via razorpay/ifsc (SBIN0000300, SBI's Mumbai main branch; CSB Bank's CSBK codes;
the withdrawn ALLA series of Allahabad Bank); naija-data (Heritage Bank, CBN code 030, licence
revoked 2024-06-03); the IBAN registry's example IBAN of Saudi Arabia.
"""

from __future__ import annotations

import pytest
from schwifty import IBAN

from heddle.identify.names import NameResolverRegistry, PaystackResolver
from heddle.identify.schemas import IdentifyRequest
from heddle.identify.service import IdentifyService
from identify.conftest import NOW
from identify.fakes import FakePaystack


@pytest.mark.parametrize("bic, name, wrong", [
    ("SOGEFRPPXXX", "Société Générale", "Inter Europe Conseil"),
    ("BSABESBB", "SABADELL", "Abbey National"),
    ("CAIXESBB", "CAIXABANK", "Banca C"),
    ("DEUTDEFF", "Deutsche Bank", None),
    ("BNPAFRPP", "BNP PARIBAS", None),
])
async def test_bics_name_their_holder_not_a_bank_routing_through_them(lookup, bic, name, wrong):
    data = await lookup(identifier=bic)
    assert data["result"] == "identified", data
    assert name.upper() in data["institution"]["name"].upper()
    if wrong:
        assert wrong.upper() not in data["institution"]["name"].upper()


async def test_a_bic_known_only_to_a_bank_code_registry_is_not_named(lookup):
    # Sparda-Bank Südwest routes through GENODEF1S01 in the Bundesbank's list; no BIC-keyed
    # source lists the BIC, so the routing entry is reported, not billed as the holder.
    data = await lookup(identifier="GENODEF1S01")
    assert data["result"] == "not_found" and "institution" not in data
    assert "Sparda-Bank" in data["detail"] and "does not say who holds a BIC" in data["detail"]


async def test_branch_bic_of_another_institution_is_not_named_without_gleifs_file(lookup):
    # SOLADES1ULM is Sparkasse Ulm's, not SOLADEST's holder's: a branch code says nothing of
    # its holder, and only GLEIF's file (imported by the operator, none shipped) lists it.
    data = await lookup(identifier="SOLADES1ULM")
    assert data["result"] == "not_found" and "institution" not in data
    assert "Sparkasse Ulm" in data["detail"] and "No BIC-keyed source lists SOLADES1" in data["detail"]


async def test_merged_bank_answers_its_current_name_by_bic_and_iban(lookup):
    by_bic = await lookup(identifier="NBADAEAA")
    by_iban = await lookup(identifier=str(IBAN.generate("AE", "035", "1234567890123456")))
    for data in (by_bic, by_iban):
        assert data["institution"]["name"] == "First Abu Dhabi Bank P.J.S.C.", data
    assert by_iban["institution"]["bic"] == "NBADAEAA"


async def test_iban_bank_code_of_a_merged_bank_under_anothers_bic_is_not_named(lookup):
    data = await lookup(identifier=str(IBAN.generate("ES", "0209", "0012345678", "0200")))
    assert data["result"] == "not_found" and "institution" not in data
    assert "ABBEY NATIONAL" in data["detail"] and "SABADELL" in data["detail"].upper()


async def test_iban_registry_name_corrected_by_the_bic_keyed_record(lookup):
    # FR bank code 30003 is Société Générale's own (the only code routed through SOGEFRPP),
    # though the registry's entry names another firm.
    data = await lookup(identifier=str(IBAN.generate("FR", "30003", "00020012345", "01234")))
    assert data["institution"]["name"] == "Société Générale"


@pytest.mark.parametrize("bic, iban, type_", [
    ("NAIAGB21", str(IBAN.generate("GB", "NAIA", "12345678", "070440")), "building_society"),
    ("TRWIBEB1", str(IBAN.generate("BE", "967", "1234567")), "electronic_money_institution"),
])
async def test_one_record_per_institution_across_rails(lookup, bic, iban, type_):
    by_bic, by_iban = await lookup(identifier=bic), await lookup(identifier=iban)
    assert by_bic["institution"]["type"] == by_iban["institution"]["type"] == type_
    assert by_bic["institution"]["name"] == by_iban["institution"]["name"]
    assert by_iban["institution"]["bic"] == bic


async def test_bic_only_a_registry_routes_through_is_not_named(lookup):
    # Coventry Building Society's BIC: the registry routes bank code COBS through it, which is
    # no evidence of who holds the BIC; GLEIF's file would be (typing it by its legal name,
    # tests/identify/test_gleif_import.py), and Heddle ships none of it.
    data = await lookup(identifier="COBSGB22")
    assert data["result"] == "not_found" and "institution" not in data
    assert "COVENTRY BUILDING SOCIETY (1 bank code(s))" in data["detail"]


async def test_iban_of_a_country_without_bank_codes_is_unsupported(lookup):
    data = await lookup(identifier="SA0380000000608010167519")
    assert data["result"] == "unsupported" and data["country"] == "SA"
    assert "bank code 80" in data["detail"]


async def test_renamed_bank_ifsc_answers_the_current_name(lookup):
    data = await lookup(identifier="CSBK0000001")
    assert data["institution"]["name"] == "CSB Bank Limited"


async def test_withdrawn_ifsc_of_a_merged_bank_names_the_successor(lookup):
    data = await lookup(identifier="ALLA0210001")
    assert data["result"] == "not_found" and "institution" not in data
    assert "Allahabad Bank" in data["detail"] and "Indian Bank" in data["detail"]
    assert "IDIB" in data["detail"]
    # Said as data too: merged, the successor with its bank code, and where that comes from.
    assert data["status"] == "merged" and data["successor"] == {"name": "Indian Bank", "code": "IDIB"}
    assert data["source"] == {"name": "ifsc_banks", "as_of": "2026-11-26"}


async def test_ifsc_not_in_rbis_list_is_not_found(lookup):
    assert (await lookup(identifier="SBIN0000300"))["result"] == "identified"
    data = await lookup(identifier="SBIN0999999")
    assert data["result"] == "not_found" and "RBI's list" in data["detail"]


async def test_nigerian_institution_whose_licence_was_revoked(lookup):
    for code in ("030", "000020"):
        data = await lookup(identifier=code, rail="nuban")
        assert data["result"] == "not_found" and "Heritage Bank" in data["detail"]
        assert data["status"] == "closed" and "successor" not in data and "institution" not in data
        assert data["source"]["name"] == "ng_cbn_list"


async def test_verified_codes_from_the_cbn_list(lookup):
    data = await lookup(identifier="108", rail="nuban")
    assert data["result"] == "identified" and data["institution"]["name"] == "Alpha Morgan Bank Limited"


async def test_phone_number_network_is_not_its_wallet(lookup):
    data = await lookup(identifier="+2348031234567")
    assert data["result"] == "not_found" and data["rail"] == "momo" and "institution" not in data
    assert "MTN" in data["detail"] and "MoMo Payment Service Bank" in data["detail"]
    # Where the operator owns the numbering the wallet is certain from the number.
    ghana = await lookup(identifier="+233241234567")
    assert ghana["result"] == "identified"


async def test_wallet_confirmed_by_holder_name_resolution(paystack, http_client, directory):
    _, url = paystack
    names = NameResolverRegistry([PaystackResolver(http_client, secret_key=FakePaystack.SECRET,
                                                   base_url=url, timeout=2.0)])
    service = IdentifyService(directory, names, clock=lambda: NOW)
    result = await service.identify(IdentifyRequest(identifier="+2348031234567",
                                                    account_number="08031234567"))
    data = result.to_dict()
    assert data["result"] == "identified" and result.billable
    assert data["institution"]["name"] == "MoMo Payment Service Bank Limited"
    assert data["account"] == {"number": "08031234567", "name": "CHIDI OKAFOR",
                               "name_resolution": "resolved"}
    assert "detail" not in data
    # No confirmation (an unknown wallet): still not_found, never billed.
    unknown = await service.identify(IdentifyRequest(identifier="+2348039999999",
                                                     account_number="08039999999"))
    assert unknown.result.value == "not_found" and not unknown.billable
    assert unknown.to_dict()["account"]["name_resolution"] == "unavailable"


@pytest.mark.parametrize("sent", [" 0123456785 ", "0123-456-785", "\t0123456785"])
async def test_account_number_is_echoed_byte_for_byte(lookup, sent):
    data = await lookup(identifier="058", rail="nuban", account_number=sent)
    assert data["account"]["number"] == sent


def test_coverage_flags_files_older_than_their_sources_cycle():
    import datetime as dt

    from heddle.identify.coverage import coverage_report, shipped_files
    from heddle.identify.datasets import load_curated

    files = {f["file"]: f for f in shipped_files(today=dt.date(2026, 11, 26))}
    assert "bic_lei.json" not in files  # no GLEIF row ships; an operator imports the file
    assert files["ifsc_branches.json.gz"]["as_of"] == "2026-08-24"
    assert files["ifsc_branches.json.gz"]["stale"]  # the npm package's copy is 94 days old
    assert files["ng_cbn_list.json"]["update_cycle_days"] == 92 and not files["ng_cbn_list.json"]["stale"]
    later = {f["file"]: f for f in shipped_files(today=dt.date(2027, 1, 17))}
    assert later["ng_cbn_list.json"]["stale"] and later["ng_cbn_list.json"]["age_days"] == 93
    report = coverage_report(load_curated(), {})
    assert report["ifsc"]["codes"] >= 176_918 and report["ifsc"]["official"]["size"] == 182_295
    assert report["nuban"]["institutions"] >= 890 and report["nuban"]["official"]["size"] == 899
    assert report["swift"]["codes"] >= 150 and report["swift"]["official"]["size"] == 39_000
    assert report["swift"]["bic_lei"] == {"shipped": 0, "imported": 0}
