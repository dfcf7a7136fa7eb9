"""Valid session tokens: every allowed algorithm, and what the verified claims expose."""

from __future__ import annotations

import datetime as dt
import time
import uuid

import pytest
from direct_testkit import ALL_ALGORITHMS, KEY_ID, WORKSPACE_ID, claims, sign

from heddle.auth.jwk_keys import mint_session_token
from heddle.auth.session_tokens import SessionClaims


@pytest.mark.parametrize("alg", ALL_ALGORITHMS)
async def test_every_allowed_algorithm_verifies(alg, keys, verifier, all_keys_published):
    key = keys[alg]
    conn = uuid.uuid4()
    now = int(time.time())
    token = sign(key, claims(conn=str(conn), iat=now, exp=now + 120))

    result = await verifier.verify(token)

    assert isinstance(result, SessionClaims)
    assert result.alg == alg
    assert result.kid == key.kid
    assert result.workspace_id == WORKSPACE_ID
    assert result.key_id == KEY_ID
    assert result.subject == "web:u_123"
    assert result.conn == conn
    assert result.audience == ("service",)
    assert result.expires_at == dt.datetime.fromtimestamp(now + 120, dt.UTC)
    assert result.issued_at == dt.datetime.fromtimestamp(now, dt.UTC)


@pytest.mark.parametrize("alg", ["ES256", "RS256", "PS384"])
async def test_minted_by_mint_session_token_verifies(alg, keys, verifier, all_keys_published):
    key = keys[alg]
    token = mint_session_token(key.private_pem, kid=key.kid, alg=alg, key_id=KEY_ID,
                               subject="web:u_9", audience=("service", "my-app"),
                               extra_claims={"plan": "gold"})
    result = await verifier.verify(token)
    assert result.subject == "web:u_9"
    assert result.audience == ("service", "my-app")
    assert result.conn is None
    assert result.claims["plan"] == "gold"
    with pytest.raises(TypeError):
        result.claims["plan"] = "free"  # read-only view


async def test_aud_as_a_plain_string(keys, verifier, all_keys_published):
    result = await verifier.verify(sign(keys["ES256"], claims(aud="service")))
    assert result.audience == ("service",)


async def test_iat_is_optional_and_a_past_nbf_is_fine(keys, verifier, all_keys_published):
    now = int(time.time())
    result = await verifier.verify(sign(keys["ES256"], claims(iat=None, nbf=now - 10)))
    assert result.issued_at is None


async def test_small_clock_skew_is_tolerated(keys, verifier, all_keys_published):
    now = int(time.time())
    # 2 s expired and 2 s "from the future": inside the default 5 s leeway.
    await verifier.verify(sign(keys["ES256"], claims(exp=now - 2, iat=now + 2)))


async def test_lifetime_of_exactly_the_maximum_is_accepted(keys, verifier, all_keys_published):
    now = int(time.time())
    await verifier.verify(sign(keys["ES256"], claims(exp=now + 900)))


async def test_same_rsa_key_serves_rs_and_ps_when_the_jwk_declares_no_alg(
        keys, verifier, jwks_server, lookup):
    key = keys["RS256"]
    undeclared = {k: v for k, v in key.jwk.items() if k != "alg"}
    lookup.add(jwks_uri=jwks_server.publish(undeclared))
    for alg in ("RS256", "RS512", "PS256"):
        assert (await verifier.verify(sign(key, alg=alg))).alg == alg


async def test_repeat_verifications_use_the_cache(keys, verifier, all_keys_published,
                                                  jwks_server):
    for _ in range(20):
        await verifier.verify(sign(keys["ES256"]))
        await verifier.verify(sign(keys["RS256"]))
    assert jwks_server.hits() == 1


async def test_a_per_call_key_lookup_overrides_the_constructor_one(keys, jwks_cache, lookup,
                                                                   all_keys_published):
    from direct_testkit import Lookup

    from heddle.auth.session_tokens import SessionTokenVerifier

    shared = SessionTokenVerifier(None, jwks_cache)
    with pytest.raises(TypeError, match="no key_lookup"):
        await shared.verify(sign(keys["ES256"]))
    assert (await shared.verify(sign(keys["ES256"]), key_lookup=lookup)).kid == keys["ES256"].kid

    other = Lookup()
    other.add(workspace_id="ws_other", jwks_uri=all_keys_published)
    bound = SessionTokenVerifier(lookup, jwks_cache)
    result = await bound.verify(sign(keys["ES256"]), key_lookup=other)
    assert result.workspace_id == "ws_other"
    assert other.calls == 1
