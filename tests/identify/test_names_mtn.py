"""The MTN MoMo adapter against a local server speaking the MoMo Open API."""

from __future__ import annotations

import pytest

from heddle.identify.names import MtnMomoResolver
from heddle.identify.names.base import UNAVAILABLE
from heddle.identify.schemas import Institution, NameResolutionStatus, Rail

MTN_GH = Institution(name="MTN Mobile Money (MobileMoney Limited)", type="mobile_money_operator",
                     code="MTN", country="GH", external_codes=(("mtn_momo", "GH"),))
MTN_UG = Institution(name="MTN Mobile Money Uganda Limited", type="mobile_money_operator",
                     code="MTN", country="UG", external_codes=(("mtn_momo", "UG"),))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def resolver(fake, url, http_client, clock=None, **kw) -> MtnMomoResolver:
    options = {"base_url": url, "subscription_key": fake.SUBSCRIPTION_KEY,
               "api_user": fake.API_USER, "api_key": fake.API_KEY,
               "target_environment": fake.TARGET, "timeout": 2.0, **kw}
    return MtnMomoResolver(http_client, clock=clock or Clock(), **options)


async def test_resolves_a_wallet_and_reuses_the_token(mtn_momo, http_client):
    fake, url = mtn_momo
    adapter = resolver(fake, url, http_client)
    first = await adapter.resolve(Rail.MOMO, MTN_GH, "+233241234567")
    assert first.status is NameResolutionStatus.RESOLVED and first.name == "Ama Serwaa Mensah"
    second = await adapter.resolve(Rail.MOMO, MTN_GH, "+233541234567")
    assert second.name == "Kofi Boateng"  # given_name + family_name when `name` is absent
    assert fake.issued == ["token-1"]


async def test_token_renewed_before_expiry(mtn_momo, http_client):
    fake, url = mtn_momo
    clock = Clock()
    adapter = resolver(fake, url, http_client, clock)
    await adapter.resolve(Rail.MOMO, MTN_GH, "+233241234567")
    clock.now += 3600 - 59  # inside the renewal margin
    await adapter.resolve(Rail.MOMO, MTN_GH, "+233241234567")
    assert fake.issued == ["token-1", "token-2"]


async def test_revoked_token_is_renewed_once(mtn_momo, http_client):
    fake, url = mtn_momo
    adapter = resolver(fake, url, http_client)
    await adapter.resolve(Rail.MOMO, MTN_GH, "+233241234567")
    fake.revoked.add("token-1")
    result = await adapter.resolve(Rail.MOMO, MTN_GH, "+233241234567")
    assert result.name == "Ama Serwaa Mensah" and fake.issued == ["token-1", "token-2"]


async def test_auth_failures(mtn_momo, http_client):
    fake, url = mtn_momo
    assert await resolver(fake, url, http_client, api_key="wrong").resolve(
        Rail.MOMO, MTN_GH, "+233241234567") == UNAVAILABLE
    assert await resolver(fake, url, http_client, subscription_key="wrong").resolve(
        Rail.MOMO, MTN_GH, "+233241234567") == UNAVAILABLE
    # The sandbox adapter sends the wrong X-Target-Environment for a mtnghana server.
    assert await resolver(fake, url, http_client, target_environment="sandbox").resolve(
        Rail.MOMO, MTN_GH, "+233241234567") == UNAVAILABLE


@pytest.mark.parametrize("mode", ["server_error", "malformed", "token_error"])
async def test_bad_answers_are_unavailable(mtn_momo, http_client, mode):
    fake, url = mtn_momo
    fake.mode = mode
    assert await resolver(fake, url, http_client).resolve(Rail.MOMO, MTN_GH, "+233241234567") == UNAVAILABLE


async def test_unknown_wallet_and_timeout(mtn_momo, http_client):
    fake, url = mtn_momo
    assert await resolver(fake, url, http_client).resolve(Rail.MOMO, MTN_GH, "+233249999999") == UNAVAILABLE
    fake.mode = "slow"
    assert await resolver(fake, url, http_client, timeout=0.3).resolve(
        Rail.MOMO, MTN_GH, "+233241234567") == UNAVAILABLE


async def test_token_without_expiry_is_refused(mtn_momo, http_client):
    fake, url = mtn_momo
    fake.expires_in = "soon"
    assert await resolver(fake, url, http_client).resolve(Rail.MOMO, MTN_GH, "+233241234567") == UNAVAILABLE


def test_supports_only_mtn_wallets_of_its_country(http_client, mtn_momo):
    fake, url = mtn_momo
    ghana = resolver(fake, url, http_client)
    assert ghana.supports(Rail.MOMO, MTN_GH) and not ghana.supports(Rail.MOMO, MTN_UG)
    assert not ghana.supports(Rail.NUBAN, MTN_GH)
    sandbox = resolver(fake, url, http_client, target_environment="sandbox")
    assert sandbox.supports(Rail.MOMO, MTN_UG)
    telecel = Institution(name="Telecel Cash", type="mobile_money_operator", code="VOD", country="GH")
    assert not sandbox.supports(Rail.MOMO, telecel)
    with pytest.raises(ValueError):
        MtnMomoResolver(http_client, base_url=url, subscription_key="", api_user="u", api_key="k")
