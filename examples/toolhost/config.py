"""The example's settings, from environment variables (``TOOLHOST_*``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ToolHostConfig:
    request_secret: str
    """The workspace request secret (`heddle workspace update WS --rotate-request-secret`)."""
    audience: str
    """Your own audience: session tokens must list it in `aud`."""
    jwks: Any
    """A JWKS document, or a `jwt.PyJWKClient` for a JWKS URL."""
    issuer: str | None = None
    """When set, tokens must carry this `iss` (your Heddle API key id, `key_…`)."""
    signing_key_file: Path | None = None
    """Your private key; when set, `POST /mint` issues subject tokens for relay mode."""
    signing_kid: str | None = None
    mint_issuer: str = "key_example"
    mint_ttl: int = 300

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ToolHostConfig:
        secret = env.get("TOOLHOST_REQUEST_SECRET", "").strip()
        audience = env.get("TOOLHOST_AUDIENCE", "").strip()
        if not secret:
            raise ConfigError("TOOLHOST_REQUEST_SECRET is required (the workspace request secret)")
        if not audience:
            raise ConfigError("TOOLHOST_AUDIENCE is required (your audience in session tokens)")
        jwks_file, jwks_url = env.get("TOOLHOST_JWKS_FILE"), env.get("TOOLHOST_JWKS_URL")
        if bool(jwks_file) == bool(jwks_url):
            raise ConfigError("set exactly one of TOOLHOST_JWKS_FILE and TOOLHOST_JWKS_URL")
        if jwks_file:
            try:
                jwks = json.loads(Path(jwks_file).read_text())
            except (OSError, ValueError) as exc:
                raise ConfigError(f"TOOLHOST_JWKS_FILE cannot be read as JSON: {exc}") from None
            if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
                raise ConfigError("TOOLHOST_JWKS_FILE must hold a JWKS document {\"keys\": [...]}")
        else:
            jwks = jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300)
        key_file = env.get("TOOLHOST_SIGNING_KEY_FILE")
        kid = env.get("TOOLHOST_SIGNING_KID")
        if key_file and not kid and jwks_file:
            kid = _single_kid(jwks)
        if key_file and not kid:
            raise ConfigError("TOOLHOST_SIGNING_KID is required with TOOLHOST_SIGNING_KEY_FILE")
        ttl = env.get("TOOLHOST_MINT_TTL", "300")
        if not ttl.isdigit() or not 1 <= int(ttl) <= 3600:
            raise ConfigError("TOOLHOST_MINT_TTL must be whole seconds from 1 to 3600")
        return cls(request_secret=secret, audience=audience, jwks=jwks,
                   issuer=env.get("TOOLHOST_ISSUER") or None,
                   signing_key_file=Path(key_file) if key_file else None, signing_kid=kid,
                   mint_issuer=env.get("TOOLHOST_MINT_ISSUER") or "key_example",
                   mint_ttl=int(ttl))


def _single_kid(jwks: dict) -> str | None:
    kids = [key.get("kid") for key in jwks["keys"] if isinstance(key, dict)]
    return kids[0] if len(kids) == 1 and isinstance(kids[0], str) else None
