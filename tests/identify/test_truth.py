"""Identify never names the wrong institution: one test per failure class found by trying
real public identifiers (issue 14). Each wrong-institution case must come back `not_found`
(with a detail saying what is known) or right.

Sources of the identifiers: bank websites (Chase UK 60-84-07, Unity Trust Bank 60-83-01,
Triodos Bank UK 16-58-10, Raiffeisen Bank Kosovo RBKOXKPR, TEB Kosovo TEBKXKPR); the NIBSS NIP
codes in banklist-ng and py-nuban (Unity Bank 000011, Providus Bank 000023, First Bank
000016, Moniepoint 090405); Razorpay's IFSC dataset (HDFC0CKUB01 is its README's example of a
sub-member code, Khamgaon Urban Co-operative Bank; HDFC0CADRSH is in the RBI list under
HDFC's code and in no sub-member list); the ISO 13616 example IBAN DE89370400440532013000.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("code, named, clearing", [
    ("60-84-07", "Chase", "National Westminster Bank plc"),
    ("60-83-01", "Unity Trust", "National Westminster Bank plc"),
    ("16-58-10", "Triodos", "The Royal Bank of Scotland plc"),
])
async def test_agency_sort_codes_are_not_billed_as_the_clearing_bank(lookup, code, named, clearing):
    data = await lookup(identifier=code, rail="sort_code")
    assert data["result"] == "not_found", f"{named}'s sort code named a clearing bank"
    assert clearing in data["detail"] and "identified_at" not in data


@pytest.mark.parametrize("nip, holder, padded_cbn_of", [
    ("000011", "Unity Bank", "First Bank of Nigeria"),
    ("000023", "Providus Bank", "Citibank Nigeria"),
])
async def test_nip_code_colliding_with_a_padded_cbn_code_names_neither(lookup, nip, holder,
                                                                        padded_cbn_of):
    data = await lookup(identifier=nip, rail="nuban")
    assert data["result"] == "not_found" and "institution" not in data
    assert holder in data["detail"] and padded_cbn_of in data["detail"]


async def test_nip_codes_without_a_collision_are_identified(lookup):
    first = await lookup(identifier="000016", rail="nuban")  # First Bank's NIP code
    assert first["institution"]["name"] == "First Bank of Nigeria Limited"
    # The 3-digit CBN codes still name the bank whose NIP code collided.
    assert (await lookup(identifier="215", rail="nuban"))["institution"]["name"] == "Unity Bank Plc"
    assert (await lookup(identifier="101", rail="nuban"))["institution"]["name"] == \
        "Providus Bank Limited"
    moniepoint = await lookup(identifier="090405", rail="nuban")
    assert moniepoint["institution"]["name"] == "Moniepoint Microfinance Bank Limited"
    # A microfinance bank known only from the shipped NIP list.
    corestep = await lookup(identifier="090365", rail="nuban")
    assert corestep["result"] == "identified"
    assert corestep["institution"]["type"] == "microfinance_bank"


async def test_ifsc_sub_member_code_names_the_sub_member(lookup):
    data = await lookup(identifier="HDFC0CKUB01", rail="ifsc")
    assert data["result"] == "identified"
    assert data["institution"]["name"] == "Khamgaon Urban Co-operative Bank"
    assert data["institution"]["type"] == "urban_cooperative_bank"
    assert data["institution"]["code"] == "HDFC0CKUB01"


async def test_ifsc_sponsor_code_shaped_like_its_sub_members_is_not_attributed(lookup):
    data = await lookup(identifier="HDFC0CADRSH", rail="ifsc")
    assert data["result"] == "not_found" and "HDFC Bank" in data["detail"]
    # HDFC's own branches have all-digit branch codes, which it does not lease.
    own = await lookup(identifier="HDFC0000001", rail="ifsc")
    assert own["result"] == "identified" and own["institution"]["name"] == "HDFC Bank Ltd"


async def test_ifsc_banks_beyond_the_curated_list(lookup):
    # Akhand Anand Co-operative Bank's own code (AACX) is in Razorpay's bank list only.
    data = await lookup(identifier="AACX0000001", rail="ifsc")
    assert data["result"] == "identified" and "Akhand Anand" in data["institution"]["name"]


@pytest.mark.parametrize("bic", ["RBKOXKPR", "TEBKXKPR", "RBKOXKPRXXX"])
async def test_kosovo_bics_are_valid(lookup, bic):
    data = await lookup(identifier=bic)
    assert data["rail"] == "swift" and data["country"] == "XK"
    assert data["result"] in ("identified", "not_found")
    # XK is also accepted as the `country` hint.
    hinted = await lookup(identifier=bic, country="xk")
    assert hinted["rail"] == "swift" and hinted["country"] == "XK"


async def test_institution_type_is_the_same_through_swift_and_iban(lookup):
    by_bic = await lookup(identifier="COBADEFF")
    by_iban = await lookup(identifier="DE89370400440532013000")
    assert by_bic["institution"]["type"] == by_iban["institution"]["type"] == "bank"


@pytest.mark.parametrize("body, sent", [
    # VocaLink's first modulus example (08-99-99, 66374958), written with a dash.
    ({"identifier": "08-99-99", "rail": "sort_code", "account_number": "6637-4958"}, "6637-4958"),
    ({"identifier": "021000021", "account_number": " 1234 5678 9 "}, " 1234 5678 9 "),
    ({"identifier": "+233241234567", "account_number": "024 123 4567"}, "024 123 4567"),
])
async def test_account_number_is_echoed_as_sent(lookup, body, sent):
    data = await lookup(**body)
    assert data["account"]["number"] == sent


async def test_ghl_bank_is_known(lookup):
    data = await lookup(identifier="300362", rail="gh_bank")
    assert data["result"] == "identified" and data["institution"]["name"] == "GHL Bank Limited"
