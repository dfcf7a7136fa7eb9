"""Rail detection when `rail` is absent (docs/identify.md)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("identifier, rail", [
    ("DEUTDEFF", "swift"),
    ("DEUTDEFF500", "swift"),
    ("DE89370400440532013000", "iban"),
    ("gb29 nwbk 6016 1331 9268 19", "iban"),
    ("021000021", "routing_number"),
    ("026009593", "routing_number"),
    ("20-00-00", "sort_code"),  # the UK's written form
    ("SBIN0000300", "ifsc"),
    ("+233241234567", "momo"),
    ("233241234567", "momo"),  # international form without '+'
    ("058", "nuban"),
    ("50211", "nuban"),
])
async def test_shape_picks_the_rail(lookup, identifier, rail):
    assert (await lookup(identifier=identifier))["rail"] == rail


@pytest.mark.parametrize("identifier, candidates", [
    ("200000", ["sort_code", "nuban", "gh_bank"]),
    ("040100", ["sort_code", "nuban", "gh_bank"]),
    ("0123456789", ["nuban", "momo"]),
])
async def test_ambiguous_without_a_hint(rejects, identifier, candidates):
    error = await rejects("ambiguous_identifier", identifier=identifier)
    assert error.details == {"candidates": candidates}
    assert error.status == 400


@pytest.mark.parametrize("identifier, country, rail", [
    ("200000", "GB", "sort_code"),
    ("040100", "GH", "gh_bank"),
    ("000058", "NG", "nuban"),
    ("0241234567", "GH", "momo"),
])
async def test_country_hint_resolves_ambiguity(lookup, identifier, country, rail):
    assert (await lookup(identifier=identifier, country=country))["rail"] == rail


async def test_nigerian_ten_digits_stay_ambiguous_with_ng(rejects):
    # A NUBAN and a payment-service-bank wallet (the phone number) look alike in Nigeria.
    error = await rejects("ambiguous_identifier", identifier="8031234567", country="NG")
    assert error.details["candidates"] == ["nuban", "momo"]


@pytest.mark.parametrize("body, fragment", [
    ({"identifier": "hello world"}, "form of no supported rail"),
    ({"identifier": "12"}, "form of no supported rail"),
    ({"identifier": "SBIN0000300", "country": "GB"}, "used in GB"),
    ({"identifier": "021000022"}, "check digit"),  # only rail it could be, and it fails
    ({"identifier": "08031234567"}, "needs `country`"),  # a national wallet number
])
async def test_invalid(rejects, body, fragment):
    error = await rejects("invalid_identifier", **body)
    assert fragment in error.message


@pytest.mark.parametrize("identifier", [
    "DEUTDEFF\u200b",  # zero-width space
    "０２１０００００２１",  # full-width digits
    "021000021\x00",
    "ＤＥＵＴＤＥＦＦ",
    "<script>",
    "' OR 1=1 --",
])
async def test_hostile_identifiers(rejects, identifier):
    await rejects("invalid_identifier", identifier=identifier)
