"""Every way a session token is refused, with the check named in the message."""

from __future__ import annotations

import time

import jwt
import pytest
from direct_testkit import KEY_ID, b64json, b64url, claims, forge_hs256, sign, sign_raw, unsigned

from heddle.auth.session_tokens import TokenError
from heddle.errors import HeddleError

SECRET = "sk_live_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"


async def refused(verifier, token: str, *fragments: str) -> TokenError:
    with pytest.raises(TokenError) as caught:
        await verifier.verify(token)
    message = caught.value.message
    for fragment in fragments:
        assert fragment in message, message
    return caught.value


async def test_token_error_is_a_401_unauthorized(keys, verifier, all_keys_published):
    error = await refused(verifier, sign(keys["ES256"], claims(exp=int(time.time()) - 60)))
    assert isinstance(error, HeddleError)
    assert (error.code, error.status) == ("unauthorized", 401)
    assert error.reason == "the token has expired (exp is in the past)"
    assert error.envelope()["error"]["message"].startswith("Session token rejected: ")


# --- algorithms refused before any key lookup ---

async def test_hs256_is_refused_before_lookup(keys, verifier, lookup, all_keys_published):
    token = jwt.encode(claims(), "a-shared-secret-of-at-least-32-bytes!!", algorithm="HS256",
                       headers={"kid": keys["RS256"].kid})
    await refused(verifier, token, "symmetric algorithms (HS*) are refused")
    assert lookup.calls == 0


@pytest.mark.parametrize("alg_key", ["RS256", "ES256"])
async def test_hmac_keyed_with_the_public_key_pem_is_refused(alg_key, keys, verifier, lookup,
                                                             all_keys_published):
    key = keys[alg_key]
    token = forge_hs256(key.public_pem, claims(), key.kid)
    await refused(verifier, token, "HS*")
    assert lookup.calls == 0


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
async def test_alg_none_is_refused(alg, keys, verifier, lookup, all_keys_published):
    await refused(verifier, unsigned(claims(), keys["ES256"].kid, alg), "alg none")
    assert lookup.calls == 0


async def test_alg_none_from_pyjwt_is_refused(keys, verifier, all_keys_published):
    token = jwt.encode(claims(), None, algorithm="none", headers={"kid": keys["ES256"].kid})
    await refused(verifier, token, "alg none")


@pytest.mark.parametrize("alg", ["EdDSA", "ES256K", "RS1", "HS512"])
async def test_other_algorithms_are_refused(alg, keys, verifier, lookup, all_keys_published):
    header = {"alg": alg, "kid": keys["ES256"].kid}
    token = f"{b64json(header)}.{b64json(claims())}.{b64url(b'sig')}"
    await refused(verifier, token, "refused" if alg.startswith("HS") else "is not allowed")
    assert lookup.calls == 0


async def test_missing_alg_is_refused(verifier, all_keys_published):
    token = f"{b64json({'kid': 'k'})}.{b64json(claims())}.{b64url(b'sig')}"
    await refused(verifier, token, "no alg")


async def test_hostile_alg_value_is_not_echoed(verifier, all_keys_published):
    token = f"{b64json({'alg': '<script>' * 5, 'kid': 'k'})}.{b64json(claims())}.c2ln"
    error = await refused(verifier, token, "alg that value is not allowed")
    assert "<script>" not in error.message


# --- header ---

async def test_missing_kid(keys, verifier, lookup, all_keys_published):
    await refused(verifier, sign(keys["ES256"], kid=None), "no kid")
    assert lookup.calls == 0


async def test_non_string_kid(keys, verifier, all_keys_published):
    token = f"{b64json({'alg': 'ES256', 'kid': 7})}.{b64json(claims())}.c2ln"
    await refused(verifier, token, "kid must be a string")


async def test_unknown_kid(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], kid="not-published"),
                  "unknown kid 'not-published'")


# --- issuer and API key ---

async def test_unknown_api_key(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(iss="key_unknown000000000000")),
                  "unknown API key key_unknown000000000000")


async def test_secret_as_iss_is_refused_and_never_echoed(keys, verifier, lookup,
                                                         all_keys_published):
    for iss in (SECRET, "sk_test_" + SECRET[8:], "Bearer " + SECRET):
        error = await refused(verifier, sign(keys["ES256"], claims(iss=iss)),
                              "Never put the secret in a token")
        assert SECRET[8:] not in error.message
        assert SECRET[8:] not in str(error)
    assert lookup.calls == 0


@pytest.mark.parametrize("iss", ["ws_123", "key_", "key_with space", "key_x/../y", 12, ["key_a"]])
async def test_iss_that_is_not_a_key_id(iss, keys, verifier, all_keys_published):
    await refused(verifier, sign_raw(keys["ES256"], claims(iss=iss)), "iss claim must be")


async def test_missing_iss(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(iss=None)), "iss claim is missing")


async def test_revoked_api_key(keys, verifier, lookup, all_keys_published):
    lookup.add(active=False, jwks_uri=all_keys_published)
    await refused(verifier, sign(keys["ES256"]), f"the API key {KEY_ID} in iss was revoked")


async def test_key_of_another_workspace_cannot_borrow_this_jwks(keys, verifier, lookup,
                                                                jwks_server):
    # Workspace B has its own (empty of this key) JWKS: a token naming B's API key but signed
    # with A's key must fail, even though A's key is perfectly valid for A.
    lookup.add(jwks_uri=jwks_server.publish(keys["ES256"].jwk, path="/a.json"))
    lookup.add("key_bbbbbbbbbbbbbbbbbbbb", workspace_id="ws_b",
               jwks_uri=jwks_server.publish(keys["ES384"].jwk, path="/b.json"))
    assert (await verifier.verify(sign(keys["ES256"]))).workspace_id != "ws_b"
    await refused(verifier, sign(keys["ES256"], claims(iss="key_bbbbbbbbbbbbbbbbbbbb")),
                  "unknown kid")


# --- audience ---

async def test_wrong_aud(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(aud=["my-app"])),
                  "aud claim must contain 'service'")


async def test_missing_aud(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(aud=None)), "the aud claim is missing")


async def test_aud_with_a_non_string_member(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(aud=["service", 5])), "aud claim")


# --- time ---

async def test_expired(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(exp=int(time.time()) - 30)),
                  "the token has expired")


async def test_missing_exp(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(exp=None)), "the exp claim is missing")


async def test_too_long_lived(keys, verifier, all_keys_published):
    error = await refused(verifier, sign(keys["ES256"], claims(exp=int(time.time()) + 3600)),
                          "at most 900 s")
    assert "3600 s ahead" in error.message or "3599 s ahead" in error.message


async def test_max_lifetime_is_configurable(keys, lookup, jwks_cache, all_keys_published):
    from heddle.auth.session_tokens import SessionTokenVerifier

    strict = SessionTokenVerifier(lookup, jwks_cache, max_lifetime=60, leeway=0)
    await refused(strict, sign(keys["ES256"], claims(exp=int(time.time()) + 120)),
                  "at most 60 s")


async def test_nbf_in_the_future(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(nbf=int(time.time()) + 60)),
                  "not valid yet (nbf is in the future)")


async def test_iat_in_the_future(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(iat=int(time.time()) + 60)),
                  "not valid yet (iat is in the future)")


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
@pytest.mark.parametrize("value", [pytest.param(str(int(time.time()) + 60), id="digits-as-string"), True, -5, 10**20,
                                   float("nan"), float("inf")])
async def test_time_claims_must_be_sane_numbers(claim, value, keys, verifier,
                                                all_keys_published):
    with pytest.raises(TokenError):
        await verifier.verify(sign(keys["ES256"], claims(**{claim: value})))


# --- subject and connection ---

async def test_missing_sub(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(sub=None)), "the sub claim is missing")


@pytest.mark.parametrize("sub", ["", "   ", "x" * 301, "web:u\x00", "line\nbreak", 42])
async def test_bad_sub(sub, keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(sub=sub)), "sub claim")


@pytest.mark.parametrize("conn", ["not-a-uuid", "support-desk", "https://tools.example.com",
                                  "{12345678-1234-1234-1234-123456789abc}",
                                  "12345678123412341234123456789abc", 7])
async def test_bad_conn(conn, keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["ES256"], claims(conn=conn)),
                  "conn claim must be a connection id in UUID form")


async def test_null_conn_is_refused(keys, verifier, all_keys_published):
    payload = claims()
    payload["conn"] = None
    await refused(verifier, sign(keys["ES256"], payload), "conn claim")


# --- integrity ---

async def test_tampered_payload(keys, verifier, all_keys_published):
    header, _, signature = sign(keys["ES256"]).split(".")
    forged = b64json(claims(sub="web:admin"))
    await refused(verifier, f"{header}.{forged}.{signature}", "signature verification failed")


@pytest.mark.parametrize("alg", ["ES256", "RS256", "PS256"])
async def test_tampered_signature(alg, keys, verifier, all_keys_published):
    header, payload, signature = sign(keys[alg]).split(".")
    flipped = ("A" if signature[10] != "A" else "B")
    bad = signature[:10] + flipped + signature[11:]
    await refused(verifier, f"{header}.{payload}.{bad}", "signature verification failed")


async def test_signed_by_another_key_with_the_same_kid(keys, verifier, all_keys_published):
    from direct_testkit import make_signing_key

    impostor = make_signing_key("ES256", kid=keys["ES256"].kid)
    await refused(verifier, sign(impostor), "signature verification failed")


# --- key type / algorithm mismatch ---

async def test_ec_alg_with_an_rsa_kid(keys, verifier, all_keys_published):
    token = sign(keys["ES256"], kid=keys["RS256"].kid)
    await refused(verifier, token, "is declared for RS256 but the token is signed with ES256")


async def test_rsa_alg_on_an_ec_key_without_declared_alg(keys, verifier, jwks_server, lookup):
    ec_jwk = {k: v for k, v in keys["ES256"].jwk.items() if k != "alg"}
    lookup.add(jwks_uri=jwks_server.publish(ec_jwk))
    token = sign(keys["RS256"], kid=keys["ES256"].kid)
    await refused(verifier, token, "is an EC key and cannot verify RS256")


async def test_es256_on_a_p384_key(keys, verifier, jwks_server, lookup):
    p384 = {k: v for k, v in keys["ES384"].jwk.items() if k != "alg"}
    lookup.add(jwks_uri=jwks_server.publish(p384))
    await refused(verifier, sign(keys["ES256"], kid=keys["ES384"].kid),
                  "is on curve P-384, but ES256 needs P-256")


async def test_ps_token_on_a_key_declared_rs(keys, verifier, all_keys_published):
    await refused(verifier, sign(keys["RS256"], alg="PS256"), "declared for RS256")


# --- malformed and hostile input ---

@pytest.mark.parametrize("token", [
    "", "abc", "a.b", "a.b.c.d", "....", "sk_live_abc",
    "!!!.@@@.###", "eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.c2ln",  # payload is not JSON
    f"{b64json(['alg'])}.{b64json({})}.c2ln",  # header is an array
    f"{b64json({'alg': 'ES256', 'kid': 'k'})}.{b64json([1, 2])}.c2ln",  # payload is an array
    f"{b64json({'alg': 'ES256', 'kid': 'k'})}.{b64url(b'[' * 3000)}.c2ln",  # deep nesting
    "é.é.é",
])
async def test_malformed_tokens(token, verifier, all_keys_published):
    await refused(verifier, token)


async def test_oversized_token(keys, verifier, lookup, all_keys_published):
    token = sign(keys["ES256"], claims(pad="x" * 10_000))
    await refused(verifier, token, "longer than 8192 bytes")
    assert lookup.calls == 0


async def test_non_string_bearer(verifier):
    await refused(verifier, None, "empty or not text")  # type: ignore[arg-type]
    await refused(verifier, b"bytes.token.here", "empty or not text")  # type: ignore[arg-type]
    await refused(verifier, "", "empty or not text")


def test_bad_verifier_settings_are_refused(lookup, jwks_cache):
    from heddle.auth.session_tokens import SessionTokenVerifier

    for kwargs in ({"leeway": -1}, {"max_lifetime": 0}, {"max_token_bytes": 10},
                   {"pasted_jwks_cache_size": 0}):
        with pytest.raises(ValueError):
            SessionTokenVerifier(lookup, jwks_cache, **kwargs)


async def test_unsupported_crit_header(keys, verifier, all_keys_published):
    token = sign(keys["ES256"], headers={"crit": ["exp-custom"], "exp-custom": 1})
    await refused(verifier, token, "crit")


async def test_workspace_without_jwks(keys, verifier, lookup):
    lookup.add()
    await refused(verifier, sign(keys["ES256"]), "no JWKS configured")
