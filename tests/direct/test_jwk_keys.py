"""Key generation, key files, JWKS merging and token minting (the caller's side)."""

from __future__ import annotations

import json
import stat
import time
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from direct_testkit import ALL_ALGORITHMS, KEY_ID

from heddle.auth.jwk_keys import (
    generate_keypair,
    load_private_key,
    merge_jwks,
    mint_session_token,
    write_keypair,
)

_PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "k"}


@pytest.mark.parametrize("alg", ALL_ALGORITHMS)
def test_public_jwks_for_every_alg_matches_the_private_key(alg, keys):
    key = keys[alg]  # made by generate_keypair (2048-bit RSA for speed)
    assert key.private_pem.startswith(b"-----BEGIN PRIVATE KEY-----")  # PKCS#8
    jwk = key.jwk
    assert {jwk["kid"], jwk["use"], jwk["alg"]} == {key.kid, "sig", alg}
    assert not _PRIVATE_MEMBERS & jwk.keys()
    public = jwt.PyJWK(jwk).key
    if alg.startswith("ES"):
        expected_curve = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}[alg]
        assert isinstance(public, ec.EllipticCurvePublicKey)
        assert public.curve.name == expected_curve
    else:
        assert isinstance(public, rsa.RSAPublicKey)
    token = jwt.encode({"x": 1}, load_private_key(key.private_pem), algorithm=alg)
    assert jwt.decode(token, public, algorithms=[alg]) == {"x": 1}


def test_rsa_defaults_to_3072_bits_and_refuses_weak_sizes():
    pem, jwks = generate_keypair("PS256", "k")
    assert load_private_key(pem).key_size == 3072
    assert jwks["keys"][0]["kid"] == "k"
    with pytest.raises(ValueError, match="at least 2048"):
        generate_keypair("RS256", rsa_bits=1024)


def test_generated_kids_are_unique_and_readable():
    kids = {generate_keypair("ES256")[1]["keys"][0]["kid"] for _ in range(5)}
    assert len(kids) == 5
    assert all(k.startswith("es256-") for k in kids)


@pytest.mark.parametrize("alg", ["HS256", "none", "EdDSA", "es256", ""])
def test_generate_refuses_other_algorithms(alg):
    with pytest.raises(ValueError, match="alg must be one of"):
        generate_keypair(alg)


def test_write_keypair(tmp_path):
    files = write_keypair(tmp_path / "keys", "ES384", "ws-key-1")
    assert stat.S_IMODE(files.private_key.stat().st_mode) == 0o600
    assert files.private_key.name == "private.pem" and files.jwks.name == "jwks.json"
    document = json.loads(files.jwks.read_text())
    assert document["keys"][0]["kid"] == files.kid == "ws-key-1"
    assert files.alg == "ES384"
    load_private_key(files.private_key.read_bytes())

    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_keypair(tmp_path / "keys", "ES256")
    assert json.loads(files.jwks.read_text()) == document  # untouched

    files.private_key.chmod(0o644)
    replaced = write_keypair(tmp_path / "keys", "ES256", overwrite=True)
    assert stat.S_IMODE(replaced.private_key.stat().st_mode) == 0o600
    assert json.loads(replaced.jwks.read_text()) != document


def test_merge_jwks_for_rotation(keys):
    old, new = {"keys": [keys["ES256"].jwk]}, {"keys": [keys["RS256"].jwk]}
    merged = merge_jwks(old, new, old)
    assert [k["kid"] for k in merged["keys"]] == [keys["ES256"].kid, keys["RS256"].kid]
    clash = {"keys": [{**keys["ES384"].jwk, "kid": keys["ES256"].kid}]}
    with pytest.raises(ValueError, match="share the kid"):
        merge_jwks(old, clash)
    with pytest.raises(TypeError):
        merge_jwks({"nokeys": []})
    with pytest.raises(TypeError):
        merge_jwks({"keys": [{"kty": "EC"}]})


def test_mint_session_token_claims(keys):
    key = keys["ES256"]
    conn = uuid.uuid4()
    token = mint_session_token(key.private_pem.decode(), kid=key.kid, alg="ES256", key_id=KEY_ID,
                               subject="web:u_1", conn=str(conn), ttl=60, now=1_700_000_000,
                               extra_claims={"tenant": "t1"})
    header = jwt.get_unverified_header(token)
    assert header == {"alg": "ES256", "kid": key.kid, "typ": "JWT"}
    payload = jwt.decode(token, jwt.PyJWK(key.jwk).key, algorithms=["ES256"], audience="service",
                         options={"verify_exp": False, "verify_iat": False})
    assert payload["iss"] == KEY_ID and payload["sub"] == "web:u_1"
    assert payload["aud"] == ["service"]
    assert (payload["iat"], payload["exp"]) == (1_700_000_000, 1_700_000_060)
    assert payload["conn"] == str(conn) and payload["tenant"] == "t1"
    assert len(payload["jti"]) >= 16


def test_mint_accepts_a_loaded_key_and_a_uuid_conn(keys):
    key = keys["RS256"]
    token = mint_session_token(key.private_key, kid=key.kid, alg="RS256", key_id=KEY_ID,
                               subject="web:u_1", conn=uuid.UUID(int=1))
    payload = jwt.decode(token, options={"verify_signature": False})
    assert payload["conn"] == "00000000-0000-0000-0000-000000000001"
    assert payload["exp"] - payload["iat"] == 120
    assert payload["iat"] == pytest.approx(time.time(), abs=5)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"key_id": "sk_live_abcdefghijklmnopqrstuvwxyz"}, "never put the secret"),
    ({"key_id": "ws_123"}, "key_…"),
    ({"subject": ""}, "subject must be"),
    ({"subject": "x" * 301}, "subject must be"),
    ({"ttl": 0}, "ttl must be"),
    ({"ttl": 901}, "ttl must be"),
    ({"ttl": 12.5}, "ttl must be"),
    ({"ttl": True}, "ttl must be"),
    ({"audience": []}, "audience"),
    ({"audience": ["service", ""]}, "audience"),
    ({"extra_claims": {"exp": 1, "sub": "x"}}, "may not set exp, sub"),
    ({"conn": "support-desk"}, "hexadecimal UUID"),
    ({"alg": "HS256"}, "alg must be one of"),
    ({"alg": "RS256"}, "RS256 needs an RSA key"),
    ({"alg": "ES384"}, "ES384 needs an EC key on curve secp384r1"),
])
def test_mint_refuses_bad_arguments(kwargs, message, keys):
    key = keys["ES256"]
    arguments = {"kid": key.kid, "alg": "ES256", "key_id": KEY_ID, "subject": "web:u_1",
                 **kwargs}
    with pytest.raises(ValueError, match=message):
        mint_session_token(key.private_pem, **arguments)


def test_load_private_key_refuses_garbage_and_non_signing_keys():
    with pytest.raises(ValueError):
        load_private_key(b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    ed = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
    with pytest.raises(TypeError, match="RSA or EC"):
        load_private_key(ed)
