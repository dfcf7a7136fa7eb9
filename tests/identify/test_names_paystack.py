"""The Paystack adapter against a local server speaking Paystack's resolve API."""

from __future__ import annotations

import time

import pytest

from heddle.identify.names import PaystackResolver
from heddle.identify.names.base import UNAVAILABLE
from heddle.identify.schemas import Institution, NameResolutionStatus, Rail

GTBANK = Institution(name="Guaranty Trust Bank Limited", type="bank", code="058", country="NG",
                     external_codes=(("paystack", "058"),))
GCB = Institution(name="GCB Bank PLC", type="bank", code="040100", country="GH",
                  external_codes=(("paystack", "040100"),))
MOMO_PSB = Institution(name="MoMo Payment Service Bank Limited", type="payment_service_bank",
                       code="120003", country="NG", external_codes=(("paystack", "120003"),))


def resolver(http_client, url, *, secret="sk_test_identify", timeout=2.0) -> PaystackResolver:
    return PaystackResolver(http_client, secret_key=secret, base_url=url, timeout=timeout)


async def test_resolves_a_nuban(paystack, http_client):
    fake, url = paystack
    result = await resolver(http_client, url).resolve(Rail.NUBAN, GTBANK, "0123456785")
    assert result.status is NameResolutionStatus.RESOLVED and result.name == "JANE ADA DOE"
    assert fake.calls == [{"account_number": "0123456785", "bank_code": "058",
                           "authorization": "Bearer sk_test_identify"}]


async def test_ghana_bank_and_nigerian_wallet(paystack, http_client):
    fake, url = paystack
    adapter = resolver(http_client, url)
    ghana = await adapter.resolve(Rail.GH_BANK, GCB, "1021130012345")
    assert ghana.name == "KWAME MENSAH"  # whitespace collapsed
    wallet = await adapter.resolve(Rail.MOMO, MOMO_PSB, "+2348031234567")
    assert wallet.name == "CHIDI OKAFOR"
    assert fake.calls[-1]["account_number"] == "8031234567"  # the national number


async def test_supports(http_client):
    adapter = resolver(http_client, "http://127.0.0.1:9")
    assert adapter.supports(Rail.NUBAN, GTBANK) and adapter.supports(Rail.GH_BANK, GCB)
    assert adapter.supports(Rail.MOMO, MOMO_PSB)
    ghana_wallet = Institution(name="MTN", type="mobile_money_operator", code="MTN", country="GH",
                               external_codes=(("mtn_momo", "GH"),))
    assert not adapter.supports(Rail.MOMO, ghana_wallet)
    assert not adapter.supports(Rail.NUBAN, Institution(name="X", type="bank", code="106",
                                                        country="NG"))


@pytest.mark.parametrize("mode", ["server_error", "malformed", "huge", "redirect",
                                  "control_chars", "wrong_account"])
async def test_bad_answers_are_unavailable(paystack, http_client, mode):
    fake, url = paystack
    fake.mode = mode
    assert await resolver(http_client, url).resolve(Rail.NUBAN, GTBANK, "0123456785") == UNAVAILABLE


async def test_wrong_secret_and_unknown_account(paystack, http_client):
    _, url = paystack
    assert await resolver(http_client, url, secret="sk_test_wrong").resolve(
        Rail.NUBAN, GTBANK, "0123456785") == UNAVAILABLE
    assert await resolver(http_client, url).resolve(Rail.NUBAN, GTBANK, "0000000000") == UNAVAILABLE


async def test_timeout_is_unavailable_and_prompt(paystack, http_client):
    fake, url = paystack
    fake.mode = "slow"
    started = time.monotonic()
    result = await resolver(http_client, url, timeout=0.3).resolve(Rail.NUBAN, GTBANK, "0123456785")
    assert result == UNAVAILABLE and time.monotonic() - started < 2


async def test_unreachable_server_is_unavailable(http_client):
    # A port nobody listens on: take one, then release it.
    import socket

    from heddle.identify.names.base import normalise_base_url
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = normalise_base_url(f"http://127.0.0.1:{port}/")
    assert await resolver(http_client, url).resolve(Rail.NUBAN, GTBANK, "0123456785") == UNAVAILABLE


def test_configuration_is_checked(http_client):
    with pytest.raises(ValueError):
        PaystackResolver(http_client, secret_key="")
    with pytest.raises(ValueError):
        PaystackResolver(http_client, secret_key="sk", base_url="ftp://example")
