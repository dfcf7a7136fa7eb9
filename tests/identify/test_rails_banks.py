"""SWIFT, IBAN, ABA routing numbers, UK sort codes and IFSC, on real identifiers."""

from __future__ import annotations

import pytest

STAMP = "2026-11-21T12:30:45.123Z"


async def test_swift_identifies_real_bics(lookup):
    data = await lookup(identifier="DEUTDEFF")
    assert data["result"] == "identified" and data["rail"] == "swift" and data["country"] == "DE"
    # A curated BIC-keyed record (swift_bics.json), which the registry entries agree with.
    assert data["institution"]["name"] == "Deutsche Bank AG"
    assert data["reachable_rails"] == ["swift"] and data["identified_at"] == STAMP

    chase = await lookup(identifier="chas us33")
    assert chase["institution"] == {"name": "JPMorgan Chase Bank, N.A.", "type": "bank",
                                    "code": "CHASUS33", "bic": "CHASUS33",
                                    "address": {"city": "New York", "country": "US"},
                                    "source": {"name": "swift_bics", "as_of": "2026-11-26"}}
    natwest = await lookup(identifier="NWBKGB2LXXX", rail="swift")
    assert natwest["institution"]["name"] == "National Westminster Bank plc"
    assert natwest["institution"]["code"] == "NWBKGB2LXXX"


async def test_swift_branch_bic_names_its_institution(lookup):
    data = await lookup(identifier="DEUTDEFF500")
    assert data["result"] == "identified"
    assert data["institution"]["name"] == "Deutsche Bank AG" and data["institution"]["code"] == "DEUTDEFF500"
    # A branch code can belong to another institution (SOLADES1ULM is Sparkasse Ulm's, not the
    # BIC8's): only GLEIF's file, once imported, says whose; without it nothing is named.
    ulm = await lookup(identifier="SOLADES1ULM")
    assert ulm["result"] == "not_found" and "institution" not in ulm
    assert "Sparkasse Ulm" in ulm["detail"] and "no institution is named" in ulm["detail"]


async def test_swift_passive_participant_is_not_reachable_on_swift(lookup):
    # A location code whose second character is 1 marks a passive (not connected) participant.
    data = await lookup(identifier="NAIAGB21")
    assert data["result"] == "identified"
    assert data["institution"]["name"] == "Nationwide Building Society"
    assert "reachable_rails" not in data


async def test_swift_unknown_bic(lookup):
    unknown = await lookup(identifier="ZZZZUS33")
    assert unknown["result"] == "not_found" and unknown["country"] == "US"
    assert "institution" not in unknown and "identified_at" not in unknown


@pytest.mark.parametrize("identifier, message", [
    ("DEUTDEF", "8 or 11"),
    ("DEUTDEFF5", "8 or 11"),
    ("DEU1DEFF", "4-letter"),
    ("DEUTXXFF", "valid BIC"),
])
async def test_swift_malformed(rejects, identifier, message):
    error = await rejects("invalid_identifier", identifier=identifier, rail="swift")
    assert message in error.message and error.details["rail"] == "swift"


async def test_iban_official_examples(lookup):
    de = await lookup(identifier="DE89 3704 0044 0532 0130 00")
    # One record per institution: the name the BIC gives, as the registry entry agrees.
    assert de["rail"] == "iban" and de["institution"]["name"] == "Commerzbank AG"
    assert de["institution"]["bic"] == "COBADEFF" and de["institution"]["code"] == "37040044"
    assert de["reachable_rails"] == ["sepa", "sepa_instant"]

    fr = await lookup(identifier="FR1420041010050500013M02606")
    assert fr["institution"]["name"] == "LA BANQUE POSTALE" and fr["country"] == "FR"

    gb = await lookup(identifier="GB29NWBK60161331926819")
    assert gb["institution"]["bic"] == "NWBKGB2L"
    # No SEPA claim for a non-EEA country; the UK rails come from the embedded sort code.
    assert gb["reachable_rails"] == ["fps", "bacs", "chaps"]


async def test_iban_well_formed_but_unknown_bank(lookup):
    data = await lookup(identifier="GB82WEST12345698765432")
    assert data["result"] == "not_found" and data["country"] == "GB"
    assert "WEST" in data["detail"]


async def test_iban_country_without_bank_directory_is_unsupported(lookup):
    data = await lookup(identifier="BR1800360305000010009795493C1")
    assert data["result"] == "unsupported" and data["country"] == "BR"


async def test_sepa_instant_follows_the_obligation_date(lookup):
    # Poland is in the EU but outside the euro area: instant receive duty from 9 January 2027.
    pl = await lookup(identifier="PL61109010140000071219812874")
    assert pl["result"] == "identified" and pl["reachable_rails"] == ["sepa"]


@pytest.mark.parametrize("identifier, message", [
    ("DE89370400440532013001", "check digits"),
    ("DE8937040044053201300", "length"),
    ("XX89370400440532013000", "not a country"),
    ("GB82WES712345698765432", "IBAN"),
])
async def test_iban_malformed(rejects, identifier, message):
    error = await rejects("invalid_identifier", identifier=identifier, rail="iban")
    assert message in error.message


@pytest.mark.parametrize("number, name, rails", [
    ("021000021", "JPMorgan Chase Bank, N.A.", ["ach", "wire", "rtp", "fednow"]),
    ("026009593", "Bank of America, N.A.", ["wire"]),
    ("121000248", "Wells Fargo Bank, N.A.", ["ach", "wire", "rtp", "fednow"]),
])
async def test_routing_numbers_of_large_banks(lookup, number, name, rails):
    data = await lookup(identifier=number)
    assert data["rail"] == "routing_number" and data["country"] == "US"
    assert data["institution"]["name"] == name and data["reachable_rails"] == rails


async def test_routing_number_valid_but_unknown(lookup):
    data = await lookup(identifier="011000015", rail="routing_number")
    assert data["result"] == "not_found" and "FedACH" in data["detail"]


@pytest.mark.parametrize("number, message", [
    ("021000022", "check digit"),
    ("131000021", "never start with 13"),
    ("02100002", "9 digits"),
    ("02100002A", "9 digits"),
])
async def test_routing_number_malformed(rejects, number, message):
    error = await rejects("invalid_identifier", identifier=number, rail="routing_number")
    assert message in error.message


async def test_routing_number_with_account(lookup, rejects):
    data = await lookup(identifier="021000021", account_number="123456789")
    assert data["account"] == {"number": "123456789", "name_resolution": "not_supported"}
    error = await rejects("invalid_identifier", identifier="021000021", account_number="123")
    assert error.details["field"] == "account_number"


@pytest.mark.parametrize("code, name, rails", [
    ("608371", "Starling Bank Limited", ["fps", "bacs"]),  # inside NatWest's 60 range
    ("230580", "Metro Bank PLC", ["fps", "bacs"]),
    ("04-00-04", "Monzo Bank Limited", ["fps", "bacs"]),
    ("40-51-62", "Handelsbanken plc", ["fps", "bacs"]),  # inside HSBC's 40 range
])
async def test_sort_codes_with_their_own_entry(lookup, code, name, rails):
    data = await lookup(identifier=code, rail="sort_code")
    assert data["result"] == "identified" and data["country"] == "GB"
    assert data["institution"]["name"] == name and data["reachable_rails"] == rails
    assert data["institution"]["code"] == code.replace("-", "").replace(" ", "")


@pytest.mark.parametrize("code, clearing_bank", [
    # Agency banks and fintechs whose published sort codes sit in a clearing bank's range:
    # Chase UK 60-84-07 and Unity Trust Bank 60-83-01 (NatWest), Triodos Bank UK 16-58-10 (RBS).
    ("60-84-07", "National Westminster Bank plc"),
    ("60-83-01", "National Westminster Bank plc"),
    ("16-58-10", "The Royal Bank of Scotland plc"),
    # Clearing banks' own codes are no different: the range alone is not evidence.
    ("20-00-00", "Barclays Bank UK PLC"),
    ("40 47 84", "HSBC UK Bank plc"),
])
async def test_sort_code_in_a_clearing_range_is_never_attributed(lookup, code, clearing_bank):
    data = await lookup(identifier=code, rail="sort_code")
    assert data["result"] == "not_found" and "institution" not in data
    assert clearing_bank in data["detail"] and "clears" in data["detail"]


async def test_sort_code_shared_range_is_not_attributed(lookup):
    data = await lookup(identifier="77-91-04", rail="sort_code")
    assert data["result"] == "not_found" and "Lloyds Bank plc and TSB Bank plc" in data["detail"]


async def test_sort_code_unknown_and_malformed(lookup, rejects):
    assert (await lookup(identifier="999999", rail="sort_code"))["result"] == "not_found"
    await rejects("invalid_identifier", identifier="20-00-0", rail="sort_code")
    error = await rejects("invalid_identifier", identifier="200000", rail="sort_code",
                          account_number="12345")
    assert error.details["field"] == "account_number"


@pytest.mark.parametrize("code, name, bic", [
    ("SBIN0000300", "State Bank of India", "SBININBB"),
    ("HDFC0000001", "HDFC Bank Ltd", "HDFCINBB"),
    ("UTIB0000004", "Axis Bank Ltd", "AXISINBB"),
])
async def test_ifsc(lookup, code, name, bic):
    data = await lookup(identifier=code.lower())
    assert data["rail"] == "ifsc" and data["country"] == "IN"
    assert data["institution"]["name"] == name and data["institution"]["bic"] == bic
    assert data["institution"]["code"] == code
    assert data["reachable_rails"] == ["neft", "rtgs", "imps", "upi"]


async def test_ifsc_unknown_bank_and_malformed(lookup, rejects):
    assert (await lookup(identifier="ZZZZ0000001", rail="ifsc"))["result"] == "not_found"
    assert "length" in (await rejects("invalid_identifier", identifier="SBIN000030",
                                      rail="ifsc")).details
    error = await rejects("invalid_identifier", identifier="SBIN1000300", rail="ifsc")
    assert "the digit 0" in error.message


async def test_rail_country_mismatch_is_unsupported(lookup):
    data = await lookup(identifier="021000021", rail="routing_number", country="GB")
    assert data == {"result": "unsupported", "rail": "routing_number",
                    "detail": "The routing_number rail covers US only."}
