"""The resolver registry: choice per institution, fallbacks, caching successes only, and a
lookup that never fails because of a provider. End to end through IdentifyService with the
real adapters on loopback servers."""

from __future__ import annotations

import pytest

from heddle.config import Settings
from heddle.identify.names import NameResolverRegistry, PaystackResolver
from heddle.identify.names.base import NOT_SUPPORTED, UNAVAILABLE, NameResolution
from heddle.identify.schemas import IdentifyRequest, Institution, NameResolutionStatus, Rail
from heddle.identify.service import IdentifyService, build_identify_service
from heddle.ttl_cache import TTLCache
from identify.fakes import FakeMtnMomo, FakePaystack

GTBANK = Institution(name="Guaranty Trust Bank Limited", type="bank", code="058", country="NG",
                     external_codes=(("paystack", "058"),))


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Exploding:
    name = "exploding"

    def supports(self, rail, institution):
        return True

    async def resolve(self, rail, institution, account_number):
        raise RuntimeError("adapter bug")


async def test_successes_are_cached_for_the_ttl(paystack, http_client):
    fake, url = paystack
    clock = Clock()
    registry = NameResolverRegistry([PaystackResolver(http_client, secret_key=FakePaystack.SECRET,
                                                      base_url=url)], cache_ttl=60, clock=clock)
    for _ in range(3):
        assert (await registry.resolve(Rail.NUBAN, GTBANK, "0123456785")).name == "JANE ADA DOE"
    assert len(fake.calls) == 1
    clock.now = 61
    await registry.resolve(Rail.NUBAN, GTBANK, "0123456785")
    assert len(fake.calls) == 2


async def test_failures_are_never_cached(paystack, http_client):
    fake, url = paystack
    registry = NameResolverRegistry([PaystackResolver(http_client, secret_key=FakePaystack.SECRET,
                                                      base_url=url)], cache_ttl=60)
    fake.mode = "server_error"
    assert await registry.resolve(Rail.NUBAN, GTBANK, "0123456785") == UNAVAILABLE
    fake.mode = "normal"
    assert (await registry.resolve(Rail.NUBAN, GTBANK, "0123456785")).name == "JANE ADA DOE"
    assert len(fake.calls) == 2


async def test_an_adapter_that_raises_falls_through(paystack, http_client):
    _, url = paystack
    registry = NameResolverRegistry([Exploding(), PaystackResolver(
        http_client, secret_key=FakePaystack.SECRET, base_url=url)])
    assert (await registry.resolve(Rail.NUBAN, GTBANK, "0123456785")).name == "JANE ADA DOE"
    assert await NameResolverRegistry([Exploding()]).resolve(Rail.NUBAN, GTBANK, "1") == UNAVAILABLE


async def test_rails_without_holder_resolution():
    registry = NameResolverRegistry([Exploding()])
    assert await registry.resolve(Rail.IBAN, GTBANK, "x") == NOT_SUPPORTED
    assert await NameResolverRegistry().resolve(Rail.NUBAN, GTBANK, "0123456785") == UNAVAILABLE


def test_ttl_cache_bounds():
    clock = Clock()
    cache = TTLCache(10, max_entries=2, clock=clock)
    cache.set("a", 1), cache.set("b", 2), cache.set("c", 3)
    assert cache.get("a") is None and cache.get("c") == 3 and len(cache) == 2
    clock.now = 10
    assert cache.get("c") is None
    disabled = TTLCache(0)
    disabled.set("a", 1)
    assert disabled.get("a") is None
    with pytest.raises(ValueError):
        TTLCache(-1)


def settings_for(paystack_url=None, momo_url=None) -> Settings:
    values = {}
    if paystack_url:
        values |= {"paystack_base_url": paystack_url, "paystack_secret_key": FakePaystack.SECRET}
    if momo_url:
        values |= {"momo_base_url": momo_url, "momo_subscription_key": FakeMtnMomo.SUBSCRIPTION_KEY,
                   "momo_api_user": FakeMtnMomo.API_USER, "momo_api_key": FakeMtnMomo.API_KEY,
                   "momo_target_environment": FakeMtnMomo.TARGET}
    return Settings(_env_file=None, name_resolution_timeout=2, name_cache_ttl=30, **values)


async def test_service_resolves_names_end_to_end(paystack, mtn_momo, http_client, directory):
    _, paystack_url = paystack
    _, momo_url = mtn_momo
    service = build_identify_service(settings_for(paystack_url, momo_url), http_client,
                                     directory=directory)

    async def account(**body):
        return (await service.identify(IdentifyRequest(**body))).to_dict()["account"]

    assert await account(identifier="058", account_number="0123456785") == {
        "number": "0123456785", "name": "JANE ADA DOE", "name_resolution": "resolved"}
    assert await account(identifier="040100", rail="gh_bank", account_number="1021130012345") == {
        "number": "1021130012345", "name": "KWAME MENSAH", "name_resolution": "resolved"}
    # `account.number` is the number as sent (spec); the resolver is asked about the wallet
    # in E.164 (the fake MoMo and Paystack answer only for the E.164 / national forms).
    assert await account(identifier="+233241234567", account_number="233241234567") == {
        "number": "233241234567", "name": "Ama Serwaa Mensah", "name_resolution": "resolved"}
    assert await account(identifier="+2348031234567", account_number="0803 123 4567") == {
        "number": "0803 123 4567", "name": "CHIDI OKAFOR", "name_resolution": "resolved"}
    # Telecel wallets have no configured resolver; IBANs have no holder resolution at all.
    assert (await account(identifier="+233201234567", account_number="0201234567"))[
        "name_resolution"] == "unavailable"
    assert (await account(identifier="DE89370400440532013000", account_number="0532013000"))[
        "name_resolution"] == "not_supported"


async def test_service_without_providers_is_unavailable(http_client, directory):
    service = build_identify_service(settings_for(), http_client, directory=directory)
    assert service.names.resolvers == ()
    result = await service.identify(IdentifyRequest(identifier="058", account_number="0123456785"))
    assert result.account.name_resolution is NameResolutionStatus.UNAVAILABLE


async def test_a_failing_provider_still_identifies(paystack, http_client, directory):
    fake, url = paystack
    fake.mode = "slow"
    service = IdentifyService(directory, NameResolverRegistry(
        [PaystackResolver(http_client, secret_key=FakePaystack.SECRET, base_url=url, timeout=0.2)]))
    result = await service.identify(IdentifyRequest(identifier="058", account_number="0123456785"))
    assert result.billable and result.account == type(result.account)(
        "0123456785", NameResolutionStatus.UNAVAILABLE)


def test_resolution_value_objects():
    assert NameResolution.resolved("A").status is NameResolutionStatus.RESOLVED
