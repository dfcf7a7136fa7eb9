"""The caller's side of direct mode: signing keys, their public JWKS, and minting tokens.

Used by `heddle key generate-jwk`, the mint endpoint example, the tests and the demo. Keys are
made with `cryptography`, exported with PyJWT's `to_jwk`, and tokens are signed with PyJWT.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from heddle.auth.jwks_keyset import ALLOWED_ALGORITHMS, MIN_RSA_BITS, key_type_for_alg
from heddle.auth.subjects import MAX_SUBJECT_LENGTH

DEFAULT_RSA_BITS = 3072  # NIST SP 800-57: 2048 is acceptable through 2030, 3072 beyond
MAX_TOKEN_TTL = 900  # what Heddle accepts (exp at most 900 s ahead)
_CURVES: dict[str, type[ec.EllipticCurve]] = {
    "ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1,
}
# Claims mint_session_token sets itself; extra_claims may not replace them.
_RESERVED_CLAIMS = frozenset({"iss", "sub", "aud", "exp", "iat", "nbf", "jti", "conn"})

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def _check_alg(alg: str) -> None:
    if alg not in ALLOWED_ALGORITHMS:
        raise ValueError(f"alg must be one of {', '.join(ALLOWED_ALGORITHMS)}")


def new_kid(alg: str) -> str:
    """A readable, unique key id such as `es256-20250101-3f9a1c2b`; dates make rotation obvious."""
    return f"{alg.lower()}-{dt.datetime.now(dt.UTC):%Y%m%d}-{secrets.token_hex(4)}"


def generate_keypair(alg: str = "ES256", kid: str | None = None, *,
                     rsa_bits: int = DEFAULT_RSA_BITS) -> tuple[bytes, dict[str, Any]]:
    """A new signing key for `alg`: (private key PEM in PKCS#8, public JWKS document).

    RS*/PS* get an RSA key of `rsa_bits` (at least 2048); ES256/384/512 get a P-256/384/521 key.
    """
    _check_alg(alg)
    kid = kid or new_kid(alg)
    if not kid.strip() or len(kid) > 256:
        raise ValueError("kid must be a non-empty string of at most 256 characters")
    private_key: PrivateKey
    if key_type_for_alg(alg) == "RSA":
        if rsa_bits < MIN_RSA_BITS:
            raise ValueError(f"rsa_bits must be at least {MIN_RSA_BITS}")
        private_key = rsa.generate_private_key(public_exponent=65537, key_size=rsa_bits)
    else:
        private_key = ec.generate_private_key(_CURVES[alg]())
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return pem, {"keys": [public_jwk(private_key, alg=alg, kid=kid)]}


def public_jwk(private_key: PrivateKey, *, alg: str, kid: str) -> dict[str, Any]:
    """The public half of `private_key` as a JWK with `kid`, `use: sig` and `alg`."""
    _check_key_fits_alg(private_key, alg)
    public_key = private_key.public_key()
    exporter = RSAAlgorithm if isinstance(public_key, rsa.RSAPublicKey) else ECAlgorithm
    jwk = exporter.to_jwk(public_key, as_dict=True)
    return {**jwk, "kid": kid, "use": "sig", "alg": alg}


def load_private_key(pem: bytes | str, password: bytes | None = None) -> PrivateKey:
    """Load a PEM private key (RSA or EC); load it once and reuse it for many tokens."""
    data = pem.encode() if isinstance(pem, str) else pem
    key = serialization.load_pem_private_key(data, password=password)
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise TypeError("the private key must be an RSA or EC key")
    return key


def _check_key_fits_alg(key: PrivateKey, alg: str) -> None:
    _check_alg(alg)
    if key_type_for_alg(alg) == "RSA":
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError(f"{alg} needs an RSA key")
        if key.key_size < MIN_RSA_BITS:
            raise ValueError(f"RSA keys must have at least {MIN_RSA_BITS} bits")
    elif not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, _CURVES[alg]):
        raise ValueError(f"{alg} needs an EC key on curve {_CURVES[alg].name}")


def mint_session_token(
    private_key_pem: bytes | str | PrivateKey,
    *,
    kid: str,
    alg: str,
    key_id: str,
    subject: str,
    audience: Iterable[str] = ("service",),
    conn: uuid.UUID | str | None = None,
    ttl: int = 120,
    extra_claims: Mapping[str, Any] | None = None,
    now: int | None = None,
) -> str:
    """Sign a session token for `subject`, issued by the API key `key_id` (`key_…`, never the
    secret), valid for `ttl` seconds (at most 900). `now` overrides the issue time (tests)."""
    key = private_key_pem if isinstance(private_key_pem, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) \
        else load_private_key(private_key_pem)
    _check_key_fits_alg(key, alg)
    if not isinstance(key_id, str) or not key_id.startswith("key_"):
        raise ValueError("key_id must be the API key public id (key_…); never put the secret "
                         "(sk_…) in a token")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > MAX_SUBJECT_LENGTH:
        raise ValueError(f"subject must be a non-empty string of at most {MAX_SUBJECT_LENGTH} "
                         "characters")
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 1 <= ttl <= MAX_TOKEN_TTL:
        raise ValueError(f"ttl must be an integer from 1 to {MAX_TOKEN_TTL} seconds")
    audiences = [audience] if isinstance(audience, str) else list(audience)
    if not audiences or not all(isinstance(a, str) and a for a in audiences):
        raise ValueError("audience must be non-empty strings")
    extra = dict(extra_claims or {})
    if clash := sorted(_RESERVED_CLAIMS & extra.keys()):
        raise ValueError(f"extra_claims may not set {', '.join(clash)}")
    issued = int(time.time()) if now is None else now
    claims: dict[str, Any] = {
        **extra,
        "iss": key_id,
        "sub": subject,
        "aud": audiences,
        "iat": issued,
        "exp": issued + ttl,
        "jti": secrets.token_urlsafe(16),
    }
    if conn is not None:
        claims["conn"] = str(conn if isinstance(conn, uuid.UUID) else uuid.UUID(conn))
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid, "typ": "JWT"})


@dataclass(frozen=True)
class KeypairFiles:
    private_key: Path  # private.pem, mode 0600
    jwks: Path  # jwks.json, the document to paste into Heddle or serve at a URL
    kid: str
    alg: str


def write_keypair(directory: str | os.PathLike[str], alg: str = "ES256", kid: str | None = None,
                  *, rsa_bits: int = DEFAULT_RSA_BITS, overwrite: bool = False) -> KeypairFiles:
    """Generate a keypair into `directory`: `private.pem` (0600) and `jwks.json`.

    Refuses to replace an existing private key unless `overwrite`: losing a key in use would
    break every token minted with it. (For rotation, generate into a new directory and merge
    the JWKS documents with `merge_jwks`.)
    """
    pem, jwks = generate_keypair(alg, kid, rsa_bits=rsa_bits)
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    private_path, jwks_path = target / "private.pem", target / "jwks.json"
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    try:
        fd = os.open(private_path, flags, 0o600)
    except FileExistsError:
        raise FileExistsError(f"{private_path} already exists; pass overwrite=True to replace "
                              "it (tokens signed with the old key will stop verifying)") from None
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)  # also when an existing file is overwritten
        handle.write(pem)
    jwks_path.write_text(json.dumps(jwks, indent=2) + "\n", encoding="utf-8")
    return KeypairFiles(private_path, jwks_path, jwks["keys"][0]["kid"], alg)


def merge_jwks(*documents: Mapping[str, Any]) -> dict[str, Any]:
    """One JWKS holding the keys of every document, in order: how a new key is published beside
    the old one during rotation. Refuses two different keys with the same `kid`."""
    merged: dict[str, dict[str, Any]] = {}
    for document in documents:
        keys = document.get("keys")
        if not isinstance(keys, list):
            raise TypeError('every document must be a JWKS (an object with a "keys" array)')
        for key in keys:
            if not isinstance(key, dict) or not isinstance(key.get("kid"), str):
                raise TypeError("every key must be an object with a kid")
            if key["kid"] in merged and merged[key["kid"]] != key:
                raise ValueError(f"two different keys share the kid {key['kid']!r}")
            merged[key["kid"]] = key
    return {"keys": list(merged.values())}
