"""The example's own signing key: generate it, publish its JWKS, sign subject tokens.

In relay mode Heddle asks your mint endpoint for a token for a subject, then sends that
token to your tools; your tools verify it against the same public key (the JWKS you gave
Heddle with `heddle workspace update --jwks-file`).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

SERVICE_AUDIENCE = "service"


def generate(out_dir: Path, kid: str | None = None) -> tuple[Path, Path]:
    """Write ``private.pem`` (mode 0600) and ``jwks.json`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kid = kid or f"toolhost-{secrets.token_hex(4)}"
    private_key = ec.generate_private_key(ec.SECP256R1())
    pem = private_key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    private_path = out_dir / "private.pem"
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    jwks_path = out_dir / "jwks.json"
    jwks_path.write_text(json.dumps(public_jwks(private_key, kid), indent=2) + "\n")
    (out_dir / "kid").write_text(kid + "\n")
    return private_path, jwks_path


def public_jwks(private_key: ec.EllipticCurvePrivateKey, kid: str) -> dict:
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(private_key.public_key()))
    jwk.update({"kid": kid, "alg": "ES256", "use": "sig"})
    return {"keys": [jwk]}


def load_private_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise TypeError(f"{path} is not an EC private key")
    return key


def sign_subject_token(private_key: ec.EllipticCurvePrivateKey, *, kid: str, subject: str,
                       issuer: str, audience: str, ttl: int) -> str:
    """A session token in the spec's shape: ES256, kid, iss = your API key id, aud."""
    now = int(time.time())
    claims = {"iss": issuer, "sub": subject, "aud": list(dict.fromkeys([SERVICE_AUDIENCE, audience])),
              "iat": now, "exp": now + ttl}
    return jwt.encode(claims, private_key, algorithm="ES256", headers={"kid": kid})
