"""The JWKS cache against a real HTTP server: caching, rotation, rate limits, outages."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from direct_testkit import FakeClock, b64url, make_signing_key, sign
from structlog.testing import capture_logs

from heddle.auth.jwks import JwksCache
from heddle.auth.session_tokens import SessionTokenVerifier, TokenError
from heddle.serving import start_tasks_eagerly


async def test_fetched_once_and_served_from_memory(keys, jwks_cache, jwks_server):
    uri = jwks_server.publish(keys["ES256"].jwk)
    first = await jwks_cache.get_key(uri, keys["ES256"].kid)
    for _ in range(50):
        assert await jwks_cache.get_key(uri, keys["ES256"].kid) is first
    assert jwks_server.hits() == 1


async def test_refetched_after_the_ttl(keys, jwks_cache, jwks_server, clock):
    uri = jwks_server.publish(keys["ES256"].jwk, keys["RS256"].jwk)
    await jwks_cache.get_key(uri, keys["RS256"].kid)
    clock.advance(299)
    await jwks_cache.get_key(uri, keys["RS256"].kid)
    assert jwks_server.hits() == 1
    # The caller drops the RSA key: once the TTL is over, it stops verifying.
    jwks_server.publish(keys["ES256"].jwk)
    clock.advance(2)
    await jwks_cache.get_key(uri, keys["ES256"].kid)
    assert jwks_server.hits() == 2
    with pytest.raises(TokenError, match="unknown kid"):
        await jwks_cache.get_key(uri, keys["RS256"].kid)


async def test_rotation_new_kid_is_picked_up_and_old_kid_keeps_working(
        keys, verifier, lookup, jwks_server, clock):
    old = keys["ES256"]
    new = make_signing_key("ES256", kid="es256-2025-rotated")
    uri = jwks_server.publish(old.jwk)
    lookup.add(jwks_uri=uri)
    await verifier.verify(sign(old))

    jwks_server.publish(old.jwk, new.jwk)  # the caller adds the new key beside the old one
    clock.advance(31)
    assert (await verifier.verify(sign(new))).kid == new.kid  # unknown kid -> one refetch
    assert (await verifier.verify(sign(old))).kid == old.kid
    assert jwks_server.hits() == 2


async def test_unknown_kid_refetch_is_rate_limited(keys, verifier, lookup, jwks_server, clock):
    lookup.add(jwks_uri=jwks_server.publish(keys["ES256"].jwk))
    await verifier.verify(sign(keys["ES256"]))
    assert jwks_server.hits() == 1

    clock.advance(31)
    for n in range(100):  # a flood of made-up kids
        with pytest.raises(TokenError, match="unknown kid"):
            await verifier.verify(sign(keys["ES256"], kid=f"bogus-{n}"))
    assert jwks_server.hits() == 2  # one refetch for the whole flood

    clock.advance(29)
    with pytest.raises(TokenError):
        await verifier.verify(sign(keys["ES256"], kid="bogus-again"))
    assert jwks_server.hits() == 2
    clock.advance(2)
    with pytest.raises(TokenError):
        await verifier.verify(sign(keys["ES256"], kid="bogus-later"))
    assert jwks_server.hits() == 3
    await verifier.verify(sign(keys["ES256"]))  # the real key never stopped working


async def test_concurrent_misses_share_one_fetch(keys, verifier, lookup, jwks_server):
    lookup.add(jwks_uri=jwks_server.publish(keys["ES256"].jwk, keys["RS256"].jwk))
    jwks_server.slow(0.2)
    tokens = [sign(keys["ES256" if n % 2 else "RS256"]) for n in range(40)]
    results = await asyncio.gather(*(verifier.verify(t) for t in tokens))
    assert len(results) == 40
    assert jwks_server.hits() == 1


async def test_a_cancelled_waiter_does_not_cancel_the_shared_fetch(keys, jwks_cache,
                                                                   jwks_server):
    uri = jwks_server.publish(keys["ES256"].jwk)
    jwks_server.slow(0.2)
    impatient = asyncio.create_task(jwks_cache.get_key(uri, keys["ES256"].kid))
    patient = asyncio.create_task(jwks_cache.get_key(uri, keys["ES256"].kid))
    await asyncio.sleep(0.05)
    impatient.cancel()
    assert (await patient).kid == keys["ES256"].kid
    assert impatient.cancelled()
    assert jwks_server.hits() == 1


# --- outages ---

async def test_down_with_a_cached_copy_serves_it_within_the_grace(keys, verifier, lookup,
                                                                 jwks_server, clock):
    lookup.add(jwks_uri=jwks_server.publish(keys["ES256"].jwk))
    await verifier.verify(sign(keys["ES256"]))
    jwks_server.fail("status", status=500)

    clock.advance(400)  # TTL over, refetch fails: the stale copy is still served
    await verifier.verify(sign(keys["ES256"]))
    assert jwks_server.hits() == 2
    clock.advance(400)  # 800 s old, still under ttl + grace (900 s)
    await verifier.verify(sign(keys["ES256"]))
    assert jwks_server.hits() == 3

    clock.advance(101)  # 901 s old: too stale to trust
    with pytest.raises(TokenError, match=r"jwks unavailable: the JWKS URI answered HTTP 500"):
        await verifier.verify(sign(keys["ES256"]))

    jwks_server.recover()
    clock.advance(31)
    await verifier.verify(sign(keys["ES256"]))


async def test_unknown_kid_while_down_keeps_the_cached_copy(keys, verifier, lookup,
                                                          jwks_server, clock):
    lookup.add(jwks_uri=jwks_server.publish(keys["ES256"].jwk))
    await verifier.verify(sign(keys["ES256"]))
    jwks_server.fail("status", status=502)
    clock.advance(31)
    with pytest.raises(TokenError, match="the last refetch failed: the JWKS URI answered HTTP 502"):
        await verifier.verify(sign(keys["ES256"], kid="new-key"))
    await verifier.verify(sign(keys["ES256"]))  # the known key still works


@pytest.mark.parametrize(("mode", "reason"), [
    ("status", "the JWKS URI answered HTTP 503"),
    ("invalid_json", "not valid JSON"),
    ("huge", "larger than 262144 bytes"),
    ("huge_chunked", "larger than 262144 bytes"),
])
async def test_down_without_a_cached_copy(mode, reason, keys, verifier, lookup, jwks_server):
    lookup.add(jwks_uri=jwks_server.publish(keys["ES256"].jwk))
    jwks_server.fail(mode)
    with pytest.raises(TokenError, match="jwks unavailable: .*" + reason):
        await verifier.verify(sign(keys["ES256"]))


async def test_not_a_jwks_document(keys, jwks_cache, jwks_server):
    with jwks_server.state.lock:
        jwks_server.state.documents["/x.json"] = {"issuer": "https://example.com"}
    with pytest.raises(TokenError, match='not a JWKS document'):
        await jwks_cache.get_key(jwks_server.url("/x.json"), "k")


async def test_404(keys, jwks_cache, jwks_server):
    with pytest.raises(TokenError, match="HTTP 404"):
        await jwks_cache.get_key(jwks_server.url("/missing.json"), "k")


async def test_unreachable_uri(http_client, keys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cache = JwksCache(http_client)
    with pytest.raises(TokenError, match=r"unreachable \(ConnectError\)"):
        await cache.get_key(f"http://127.0.0.1:{port}/jwks.json", "k")


async def test_slow_server_hits_the_fetch_timeout(http_client, keys, jwks_server):
    cache = JwksCache(http_client, fetch_timeout=0.1)
    uri = jwks_server.publish(keys["ES256"].jwk)
    jwks_server.slow(0.5)
    with pytest.raises(TokenError, match="did not answer within 0.1 s"):
        await cache.get_key(uri, keys["ES256"].kid)


async def test_errors_from_the_injected_client_are_contained(keys, jwks_server):
    def refuse(request: httpx.Request) -> httpx.Response:
        raise PermissionError("destination is a private address")

    # An SSRF-guarding client raising its own exception type must not escape as a 500.
    async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
        cache = JwksCache(client)
        with pytest.raises(TokenError, match=r"fetch failed \(PermissionError\)"):
            await cache.get_key(jwks_server.publish(keys["ES256"].jwk), keys["ES256"].kid)


async def test_a_fetch_that_ends_in_its_first_step_is_tried_again_after_the_interval(keys, jwks_server):
    """Python 3.12+ servers start tasks eagerly (heddle/serving.py): a fetch refused before it
    had anything to wait for ends inside `create_task`, and must not be kept as in flight (every
    later caller would wait on that finished fetch and none would ever fetch again)."""
    refused = []

    def refuse(request: httpx.Request) -> httpx.Response:
        refused.append(request.url)
        raise PermissionError("destination is a private address")

    restore = start_tasks_eagerly()
    try:
        async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
            clock = FakeClock()
            cache = JwksCache(client, min_refresh_interval=30, clock=clock)
            uri = jwks_server.publish(keys["ES256"].jwk)
            with pytest.raises(TokenError, match="fetch failed"):
                await cache.get_key(uri, keys["ES256"].kid)
            clock.advance(31)
            with pytest.raises(TokenError, match="fetch failed"):
                await cache.get_key(uri, keys["ES256"].kid)
    finally:
        if restore is not None:
            restore()
    assert len(refused) == 2


async def test_failed_fetches_are_retried_at_most_once_per_interval(keys, jwks_cache,
                                                                    jwks_server, clock):
    uri = jwks_server.publish(keys["ES256"].jwk)
    jwks_server.fail("status")
    for _ in range(20):
        with pytest.raises(TokenError, match="jwks unavailable"):
            await jwks_cache.get_key(uri, keys["ES256"].kid)
    assert jwks_server.hits() == 1
    with pytest.raises(TokenError, match="next attempt in 30 s"):
        await jwks_cache.get_key(uri, keys["ES256"].kid)

    jwks_server.recover()
    clock.advance(30)
    assert (await jwks_cache.get_key(uri, keys["ES256"].kid)).kid == keys["ES256"].kid
    assert jwks_server.hits() == 2


async def test_invalidate_forces_a_fetch(keys, jwks_cache, jwks_server):
    uri = jwks_server.publish(keys["ES256"].jwk)
    await jwks_cache.get_key_set(uri)
    jwks_cache.invalidate(uri)
    await jwks_cache.get_key_set(uri)
    jwks_cache.invalidate()
    assert len(await jwks_cache.get_key_set(uri)) == 1
    assert jwks_server.hits() == 3


async def test_the_number_of_cached_uris_is_bounded(keys, http_client, jwks_server):
    cache = JwksCache(http_client, max_uris=2)
    uris = [jwks_server.publish(keys["ES256"].jwk, path=f"/{n}.json") for n in range(3)]
    for uri in uris:
        await cache.get_key_set(uri)
    await cache.get_key_set(uris[2])
    await cache.get_key_set(uris[0])  # evicted by the third: fetched again
    assert [jwks_server.hits(f"/{n}.json") for n in range(3)] == [2, 1, 1]


def test_bad_settings_are_refused(http_client):
    for kwargs in ({"ttl": 0}, {"min_refresh_interval": -1}, {"stale_grace": -1},
                   {"max_bytes": 10}, {"fetch_timeout": 0}, {"max_uris": 0}):
        with pytest.raises(ValueError):
            JwksCache(http_client, **kwargs)


# --- what is in the set ---

async def test_malformed_and_unsupported_keys_are_skipped_and_logged(keys, verifier, lookup,
                                                                    jwks_server):
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    weak = RSAAlgorithm.to_jwk(rsa.generate_private_key(65537, 1024).public_key(), as_dict=True)
    private = RSAAlgorithm.to_jwk(rsa.generate_private_key(65537, 2048), as_dict=True)
    bad = [
        "not an object",
        {"kty": "EC", "crv": "P-256"},  # no kid
        {"kid": "sym", "kty": "oct", "k": "c2VjcmV0"},
        {"kid": "sym-no-k", "kty": "oct"},
        {"kid": "ed", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
        {**weak, "kid": "weak"},
        {"kid": "huge", "kty": "RSA", "e": "AQAB",
         "n": b64url(((1 << 9000) + 1).to_bytes(1126, "big"))},
        {**private, "kid": "private"},
        {**keys["ES384"].jwk, "kid": "enc", "use": "enc"},
        {**keys["ES384"].jwk, "kid": "no-verify", "key_ops": ["encrypt"]},
        {**keys["ES384"].jwk, "kid": "wrong-curve", "alg": "ES256"},
        {**keys["ES384"].jwk, "kid": "k256", "crv": "secp256k1", "alg": None},
        {"kid": "garbage", "kty": "EC", "crv": "P-256", "x": "!!", "y": "??"},
        {"kid": "hs", "kty": "RSA", "alg": "HS256", "n": "AQAB", "e": "AQAB"},
        keys["ES256"].jwk,
        {**keys["ES384"].jwk, "kid": keys["ES256"].kid},  # duplicate kid
    ]
    lookup.add(jwks_uri=jwks_server.publish(*bad))
    with capture_logs() as logs:
        result = await verifier.verify(sign(keys["ES256"]))
    assert result.kid == keys["ES256"].kid
    skipped = [e for e in logs if e["event"] == "jwks_key_skipped"]
    assert len(skipped) == len(bad) - 1
    reasons = " | ".join(e["reason"] for e in skipped)
    for fragment in ("not a JSON object", "missing or invalid kid", "unsupported kty 'oct'",
                     "unsupported kty 'OKP'", "1024 bits", "9001 bits", "private or symmetric key material",
                     "use is not 'sig'", "key_ops", "does not fit curve P-384",
                     "unsupported curve", "cannot import", "unsupported alg 'HS256'",
                     "duplicate kid"):
        assert fragment in reasons, fragment
    assert not any("c2VjcmV0" in str(e) for e in logs)  # key material is never logged
    for kid in ("sym", "weak", "private", "enc"):
        with pytest.raises(TokenError, match="unknown kid"):
            await verifier.verify(sign(keys["ES256"], kid=kid))


async def test_too_many_keys_is_not_a_jwks(keys, jwks_cache, jwks_server):
    uri = jwks_server.publish(*([keys["ES256"].jwk] * 101))
    with pytest.raises(TokenError, match="too many keys"):
        await jwks_cache.get_key(uri, keys["ES256"].kid)


async def test_verifier_with_pinned_settings(keys, lookup, http_client, jwks_server):
    cache = JwksCache(http_client, ttl=1, min_refresh_interval=0)
    verifier = SessionTokenVerifier(lookup, cache)
    lookup.add(jwks_uri=jwks_server.publish(keys["ES256"].jwk))
    await verifier.verify(sign(keys["ES256"]))
    new = make_signing_key("ES256", kid="immediate")
    jwks_server.publish(keys["ES256"].jwk, new.jwk)
    await verifier.verify(sign(new))  # no refresh interval: picked up at once
    assert jwks_server.hits() == 2


async def test_aclose_cancels_a_fetch_in_flight(keys, jwks_cache, jwks_server):
    uri = jwks_server.publish(keys["ES256"].jwk)
    jwks_server.slow(0.5)
    waiter = asyncio.create_task(jwks_cache.get_key(uri, keys["ES256"].kid))
    await asyncio.sleep(0.05)
    await jwks_cache.aclose()
    with pytest.raises(asyncio.CancelledError):
        await waiter
