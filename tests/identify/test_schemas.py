"""The request model rejects bad input with clear errors; the result omits unknown fields."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from heddle.identify.schemas import (
    AccountInfo,
    Identification,
    IdentifyRequest,
    Institution,
    NameResolutionStatus,
    Rail,
    ResultKind,
    format_timestamp,
)


def errors(**body) -> list[dict]:
    with pytest.raises(ValidationError) as info:
        IdentifyRequest.model_validate(body)
    return info.value.errors()


def test_minimal_request_and_normalisation():
    request = IdentifyRequest.model_validate(
        {"identifier": "  DEUTDEFF ", "rail": "swift", "country": "de", "account_number": "12 34-56"})
    assert request.identifier == "DEUTDEFF"
    assert request.rail is Rail.SWIFT
    assert request.country == "DE"
    assert request.account_number == "123456"


@pytest.mark.parametrize("body, field", [
    ({}, "identifier"),
    ({"identifier": ""}, "identifier"),
    ({"identifier": "   "}, "identifier"),
    ({"identifier": "x" * 65}, "identifier"),
    ({"identifier": 12345678}, "identifier"),
    ({"identifier": None}, "identifier"),
    ({"identifier": "DEUTDEFF", "rail": "ach"}, "rail"),
    ({"identifier": "DEUTDEFF", "country": "XX"}, "country"),
    ({"identifier": "DEUTDEFF", "country": "GBR"}, "country"),
    ({"identifier": "DEUTDEFF", "country": "Ü1"}, "country"),
    ({"identifier": "DEUTDEFF", "account_number": "12345678901234567890123456789012345"}, "account_number"),
    ({"identifier": "DEUTDEFF", "account_number": "1234'; DROP TABLE"}, "account_number"),
    ({"identifier": "DEUTDEFF", "account_number": "١٢٣٤"}, "account_number"),
    ({"identifier": "DEUTDEFF", "account_number": ""}, "account_number"),
    ({"identifier": "DEUTDEFF", "account_number": "x" * 10_000}, "account_number"),
    ({"identifier": "DEUTDEFF", "bank": "x"}, "bank"),
])
def test_bad_requests_name_the_field(body, field):
    assert any(e["loc"][0] == field for e in errors(**body))


def institution(**kw) -> Institution:
    return Institution(**{"name": "GCB Bank PLC", "type": "bank", "code": "040100",
                          "country": "GH", **kw})


def test_identified_result_shape():
    at = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
    result = Identification(
        ResultKind.IDENTIFIED, Rail.GH_BANK, "GH", institution(bic="GHCBGHAC", city="Accra"),
        ("gh_ach",), AccountInfo("1021130012345", NameResolutionStatus.RESOLVED, "KWAME MENSAH"),
        identified_at=at)
    assert result.billable
    assert result.to_dict() == {
        "result": "identified", "rail": "gh_bank", "country": "GH",
        "institution": {"name": "GCB Bank PLC", "type": "bank", "code": "040100",
                        "bic": "GHCBGHAC", "address": {"city": "Accra", "country": "GH"}},
        "reachable_rails": ["gh_ach"],
        "account": {"number": "1021130012345", "name": "KWAME MENSAH", "name_resolution": "resolved"},
        "identified_at": "2026-01-02T03:04:05.678Z",
    }


def test_unknown_fields_are_omitted():
    result = Identification(ResultKind.IDENTIFIED, Rail.NUBAN, "NG", institution(country="NG"),
                            identified_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    data = result.to_dict()
    assert "bic" not in data["institution"] and data["institution"]["address"] == {"country": "NG"}
    assert "reachable_rails" not in data and "account" not in data and "detail" not in data


def test_not_identified_results_carry_no_institution_and_are_not_billed():
    for kind in (ResultKind.NOT_FOUND, ResultKind.UNSUPPORTED):
        result = Identification(kind, Rail.NUBAN, "NG", institution(), ("nip",),
                                AccountInfo("0123456789", NameResolutionStatus.UNAVAILABLE),
                                identified_at=dt.datetime.now(dt.UTC), detail="why")
        data = result.to_dict()
        assert not result.billable
        assert "institution" not in data and "identified_at" not in data
        assert data["account"] == {"number": "0123456789", "name_resolution": "unavailable"}
        assert data["detail"] == "why"


def test_timestamps_are_utc_with_z():
    lagos = dt.timezone(dt.timedelta(hours=1))
    assert format_timestamp(dt.datetime(2026, 5, 1, 13, 0, tzinfo=lagos)) == "2026-05-01T12:00:00.000Z"
    with pytest.raises(ValueError):
        format_timestamp(dt.datetime(2026, 5, 1))


@given(st.text(alphabet="0123456789ABCDEFabcdef -", min_size=1, max_size=40))
def test_account_number_normalisation_is_idempotent(raw):
    try:
        first = IdentifyRequest(identifier="x", account_number=raw).account_number
    except ValidationError:
        return
    assert IdentifyRequest(identifier="x", account_number=first).account_number == first
    assert first == first.upper() and " " not in first and "-" not in first
