"""Bearer classification, and the guarantee that no input makes the verifier crash."""

from __future__ import annotations

import pytest
from direct_testkit import b64json, claims, sign, unsigned
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heddle.auth.session_tokens import SessionTokenVerifier, TokenError, looks_like_jwt


def test_real_tokens_are_jwts(keys):
    for key in keys.values():
        assert looks_like_jwt(sign(key))


def test_unsigned_tokens_are_still_jwts_so_direct_mode_refuses_them():
    assert looks_like_jwt(unsigned(claims(), "k"))


@pytest.mark.parametrize("bearer", [
    "sk_live_" + "a" * 43,
    "sk_test_abc.def.ghi",  # header segment is not JSON
    "",
    "a.b",
    "a.b.c.d",
    ".payload.sig",
    f"{b64json({'alg': 'ES256'})}..sig",  # empty payload
    f"{b64json({'typ': 'JWT'})}.{b64json({})}.sig",  # no alg
    f"{b64json(['alg'])}.{b64json({})}.sig",  # header not an object
    "e30=.e30.c2ln",  # {} with padding: no alg
    "!!!!.e30.c2ln",
    "eyJhbGciOiJFUzI1NiJ9" + "A" * 5000 + ".e30.c2ln",  # header segment too long
    "é.é.é",
])
def test_everything_else_is_not(bearer):
    assert not looks_like_jwt(bearer)


def test_non_strings_are_not_jwts():
    assert not looks_like_jwt(None)  # type: ignore[arg-type]
    assert not looks_like_jwt(b"a.b.c")  # type: ignore[arg-type]


@given(st.text(max_size=300))
def test_looks_like_jwt_never_raises(text):
    assert looks_like_jwt(text) in (True, False)


@given(st.lists(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=",
                        max_size=40), min_size=3, max_size=3))
def test_looks_like_jwt_never_raises_on_base64ish_segments(parts):
    looks_like_jwt(".".join(parts))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_verify_raises_only_token_error_on_mutated_tokens(data, keys, lookup,
                                                                jwks_server, http_client):
    from heddle.auth.jwks import JwksCache

    lookup.add(jwks_json={"keys": [keys["ES256"].jwk]})
    verifier = SessionTokenVerifier(lookup, JwksCache(http_client))
    token = sign(keys["ES256"])
    position = data.draw(st.integers(0, len(token) - 1))
    replacement = data.draw(st.text(max_size=3))
    mutated = token[:position] + replacement + token[position + 1:]
    try:
        await verifier.verify(mutated)
    except TokenError:
        pass
