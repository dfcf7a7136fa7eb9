"""NUBAN, mobile-money wallets and Ghanaian bank sort codes."""

from __future__ import annotations

import pytest


def nuban(bank_code: str, serial: str) -> str:
    """A valid NUBAN, computed from the CBN standard's text (independent of the code under test)."""
    institution = ("000" + bank_code) if len(bank_code) == 3 else ("9" + bank_code)
    weights = [3, 7, 3] * 5
    total = sum(int(d) * w for d, w in zip(institution + serial, weights))
    return serial + str((10 - total % 10) % 10)


def broken(account: str) -> str:
    return account[:9] + str((int(account[9]) + 1) % 10)


@pytest.mark.parametrize("code, name", [
    ("058", "Guaranty Trust Bank Limited"),
    ("011", "First Bank of Nigeria Limited"),
    ("044", "Access Bank Plc"),
    ("057", "Zenith Bank Plc"),
    ("50211", "Kuda Microfinance Bank Limited"),
    ("50515", "Moniepoint Microfinance Bank Limited"),
])
async def test_nuban_account_at_its_bank(lookup, code, name):
    account = nuban(code, "012345678")
    data = await lookup(identifier=code, account_number=account)
    assert data["result"] == "identified" and data["rail"] == "nuban" and data["country"] == "NG"
    assert data["institution"]["name"] == name and data["reachable_rails"] == ["nip"]
    assert data["account"] == {"number": account, "name_resolution": "unavailable"}


async def test_nuban_institution_code_forms(lookup):
    for identifier in ("058", "000058"):
        assert (await lookup(identifier=identifier, rail="nuban"))["institution"]["code"] == "058"
    for identifier in ("50211", "950211", "090267"):  # CBN code, NUBAN form, NIP code
        data = await lookup(identifier=identifier, rail="nuban")
        assert data["institution"]["name"] == "Kuda Microfinance Bank Limited"
    assert (await lookup(identifier="100004", rail="nuban"))["institution"]["type"] == "mobile_money_operator"


async def test_nuban_failing_the_check_digit_is_invalid(rejects):
    error = await rejects("invalid_identifier", identifier="058",
                          account_number=broken(nuban("058", "012345678")))
    assert error.details == {"rail": "nuban", "field": "account_number"}
    assert "Guaranty Trust Bank" in error.message


async def test_wallet_institutions_have_no_check_digit(lookup):
    data = await lookup(identifier="100004", rail="nuban", account_number="8031234567")
    assert data["result"] == "identified" and data["account"]["number"] == "8031234567"


async def test_nuban_alone_is_never_identified(lookup):
    account = nuban("058", "012345678")
    data = await lookup(identifier=account, rail="nuban")
    assert data["result"] == "not_found" and data["country"] == "NG"
    assert "institution" not in data and "identified_at" not in data
    assert "check digit of" in data["detail"] and "`identifier`" in data["detail"]


async def test_nuban_unknown_institution_and_malformed(lookup, rejects):
    assert (await lookup(identifier="999", rail="nuban"))["result"] == "not_found"
    await rejects("invalid_identifier", identifier="0588", rail="nuban")
    await rejects("invalid_identifier", identifier="058", account_number="012345678")
    await rejects("invalid_identifier", identifier="058", account_number="01234567890")


@pytest.mark.parametrize("wallet, country, name, code", [
    ("+233241234567", "GH", "MTN Mobile Money (MobileMoney Limited)", "MTN"),
    ("+233201234567", "GH", "Telecel Cash (formerly Vodafone Cash)", "VOD"),
    ("+233261234567", "GH", "AT Money (formerly AirtelTigo Money)", "ATL"),
    ("+254712345678", "KE", "M-PESA (Safaricom PLC)", "MPESA"),
    ("+256772123456", "UG", "MTN Mobile Money Uganda Limited", "MTN"),
    ("+255754123456", "TZ", "M-Pesa Tanzania (Vodacom Tanzania PLC)", "MPESA"),
])
async def test_wallets(lookup, wallet, country, name, code):
    data = await lookup(identifier=wallet)
    assert data["result"] == "identified" and data["rail"] == "momo" and data["country"] == country
    assert data["institution"]["name"] == name and data["institution"]["code"] == code


async def test_national_wallet_numbers_need_the_country(lookup, rejects):
    data = await lookup(identifier="024 123 4567", country="GH", account_number="0241234567")
    assert data["institution"]["code"] == "MTN"
    # `account.number` is the wallet number as sent, not its international form (spec).
    assert data["account"] == {"number": "0241234567", "name_resolution": "unavailable"}
    error = await rejects("invalid_identifier", identifier="0241234567", rail="momo")
    assert error.details["needs"] == "country"


async def test_wallet_without_mobile_money_or_coverage(lookup):
    glo = await lookup(identifier="+2348051234567")  # Glo runs no PSB wallet
    assert glo["result"] == "not_found" and "Glo" in glo["detail"]
    france = await lookup(identifier="+33612345678")
    assert france["result"] == "unsupported" and france["country"] == "FR"


@pytest.mark.parametrize("body, message", [
    ({"identifier": "+233302123456"}, "not a mobile number"),  # Accra landline
    ({"identifier": "+23324123"}, "valid phone number"),
    ({"identifier": "+233241234567", "account_number": "0201234567"}, "same phone number"),
    ({"identifier": "+2332412345x7", "rail": "momo"}, "digits"),
])
async def test_wallet_malformed(rejects, body, message):
    error = await rejects("invalid_identifier", **body)
    assert message in error.message


async def test_ghana_bank_sort_codes(lookup):
    gcb = await lookup(identifier="040100", country="GH")
    assert gcb["result"] == "identified" and gcb["rail"] == "gh_bank"
    assert gcb["institution"] == {"name": "GCB Bank PLC", "type": "bank", "code": "040100",
                                  "bic": "GHCBGHAC", "address": {"country": "GH"},
                                  "source": {"name": "gh_banks", "as_of": "2026-11-23"}}
    assert gcb["reachable_rails"] == ["gh_ach", "ghipss_instant"]
    sinapi = await lookup(identifier="240092", rail="gh_bank")
    assert sinapi["institution"]["type"] == "savings_and_loans" and "reachable_rails" not in sinapi


async def test_ghana_branch_code_is_not_attributed_by_range(lookup):
    data = await lookup(identifier="240111", rail="gh_bank", account_number="1021130012345")
    assert data["result"] == "not_found" and "Fidelity Bank Ghana Limited" in data["detail"]
    assert data["account"] == {"number": "1021130012345", "name_resolution": "unavailable"}


async def test_ghana_malformed(rejects):
    await rejects("invalid_identifier", identifier="04010", rail="gh_bank")
    await rejects("invalid_identifier", identifier="040100", rail="gh_bank", account_number="12345")
