"""The verified-token memory: a token is signature-checked once, yet every later use is still
checked for revocation, its key being the same one, and the clock."""

from __future__ import annotations

import time

import pytest
from direct_testkit import KEY_ID, claims, make_signing_key, sign

from heddle.auth import session_claims, session_tokens
from heddle.auth.session_tokens import SessionTokenVerifier, TokenError


@pytest.fixture
def decodes(monkeypatch) -> list[str]:
    """Counts the signature checks (PyJWT decodes) the verifier makes."""
    seen: list[str] = []
    real = session_claims.decode_verified

    def counting(token, *args, **kwargs):
        seen.append(token)
        return real(token, *args, **kwargs)

    monkeypatch.setattr(session_claims, "decode_verified", counting)
    return seen


async def test_a_token_is_signature_checked_once(keys, verifier, lookup, decodes):
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    token = sign(keys["ES256"])
    first = await verifier.verify(token)
    again = await verifier.verify(token)
    assert again == first and again.subject == "web:u_123"
    assert decodes == [token]
    assert lookup.calls == 2  # the API key is looked up on every use (revocation)


async def test_each_distinct_token_is_checked(keys, verifier, lookup, decodes):
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    await verifier.verify(sign(keys["ES256"], claims(sub="web:a")))
    await verifier.verify(sign(keys["ES256"], claims(sub="web:b")))
    assert len(decodes) == 2


async def test_revocation_applies_to_a_remembered_token(keys, verifier, lookup):
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    token = sign(keys["ES256"])
    await verifier.verify(token)
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]}, active=False)
    with pytest.raises(TokenError, match="was revoked"):
        await verifier.verify(token)
    assert len(verifier._verified) == 0


async def test_a_key_removed_from_the_jwks_refuses_a_remembered_token(keys, verifier, lookup):
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    token = sign(keys["ES256"])
    await verifier.verify(token)
    lookup.add(jwks_json={"keys": [keys["PS256"].jwk]})
    with pytest.raises(TokenError, match="unknown kid"):
        await verifier.verify(token)


async def test_another_key_under_the_same_kid_checks_the_signature_again(keys, verifier, lookup, decodes):
    """The remembered key is compared by identity, so a replaced key is never trusted for a
    signature it did not make."""
    original = keys["ES256"]
    lookup.add(jwks_json={"keys": [original.jwk]})
    token = sign(original)
    await verifier.verify(token)
    impostor = make_signing_key("ES256", kid=original.kid)
    lookup.add(jwks_json={"keys": [impostor.jwk]})
    with pytest.raises(TokenError, match="signature verification failed"):
        await verifier.verify(token)
    assert decodes == [token, token]


async def test_a_refetched_jwks_checks_the_signature_again(keys, verifier, lookup, all_keys_published,
                                                           clock, decodes):
    token = sign(keys["RS256"])
    await verifier.verify(token)
    await verifier.verify(token)
    assert len(decodes) == 1
    clock.advance(301)  # past the JWKS cache TTL: the set is fetched again, new key objects
    await verifier.verify(token)
    assert len(decodes) == 2


async def test_expiry_applies_to_a_remembered_token(keys, lookup, jwks_cache, monkeypatch):
    verifier = SessionTokenVerifier(lookup, jwks_cache, leeway=0)
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    now = time.time()
    token = sign(keys["ES256"], claims(iat=int(now), exp=int(now) + 30))
    await verifier.verify(token)
    monkeypatch.setattr(session_tokens.time, "time", lambda: now + 31)
    with pytest.raises(TokenError, match="has expired"):
        await verifier.verify(token)
    assert len(verifier._verified) == 0


async def test_a_clock_moved_back_refuses_a_remembered_token(keys, lookup, jwks_cache, monkeypatch):
    verifier = SessionTokenVerifier(lookup, jwks_cache, leeway=0)
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    now = time.time()
    token = sign(keys["ES256"], claims(nbf=int(now) - 1, exp=int(now) + 60))
    await verifier.verify(token)
    monkeypatch.setattr(session_tokens.time, "time", lambda: now - 120)
    with pytest.raises(TokenError, match="not valid yet"):
        await verifier.verify(token)


async def test_refused_tokens_are_not_remembered(keys, verifier, lookup):
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    expired = sign(keys["ES256"], claims(iat=int(time.time()) - 600, exp=int(time.time()) - 300))
    for _ in range(2):
        with pytest.raises(TokenError, match="has expired"):
            await verifier.verify(expired)
    with pytest.raises(TokenError, match="unknown API key"):
        await verifier.verify(sign(keys["ES256"], claims(iss="key_" + "z" * 24)))
    assert len(verifier._verified) == 0


async def test_the_memory_is_bounded_and_can_be_disabled(keys, lookup, jwks_cache, decodes):
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    small = SessionTokenVerifier(lookup, jwks_cache, verified_cache_size=2)
    tokens = [sign(keys["ES256"], claims(sub=f"web:u{i}")) for i in range(3)]
    for token in tokens:
        await small.verify(token)
    assert len(small._verified) == 2
    await small.verify(tokens[0])  # the oldest was evicted: checked again
    assert len(decodes) == 4

    off = SessionTokenVerifier(lookup, jwks_cache, verified_cache_size=0)
    await off.verify(tokens[1])
    await off.verify(tokens[1])
    assert len(decodes) == 6 and len(off._verified) == 0


async def test_a_remembered_token_still_names_its_own_key(keys, verifier, lookup):
    """Two API keys of one workspace share the JWKS; a token's iss is fixed by its signature."""
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    lookup.add("key_" + "b" * 24, jwks_json={"keys": [keys["ES256"].jwk]})
    token = sign(keys["ES256"])
    assert (await verifier.verify(token)).key_id == KEY_ID
    assert (await verifier.verify(token)).key_id == KEY_ID
