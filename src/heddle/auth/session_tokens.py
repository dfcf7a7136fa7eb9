"""Direct mode: verifying the short-lived session tokens (JWTs) browsers send to Loom.

The caller's backend signs a token with its own private key; Heddle finds the public key in
the workspace's JWKS (pasted, or fetched from its URI) by the token's `kid`, and the workspace
through the token's `iss` (an API key public id). The order of the checks matters:

1. shape and size, then the header: `alg` must be an allowed asymmetric algorithm (HS* and
   `none` are refused here, before any key is looked up, so an RSA public key can never be
   used as an HMAC secret) and `kid` must be present;
2. `iss` (read unverified, only to choose the key): a `key_…` id, never an `sk_…` secret;
3. the API key (active) and its workspace's JWKS, then the key `kid`, whose type must fit `alg`;
4. the signature and `exp`/`nbf`/`iat`/`aud` (PyJWT), then Heddle's own claim rules.

Every failure is a `TokenError` whose message names the failed check and never a secret.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from heddle.auth import session_claims
from heddle.auth.jwks import JwksCache
from heddle.auth.jwks_keyset import (
    ALLOWED_ALGORITHMS,
    MAX_KID_LENGTH,
    InvalidJwks,
    JwksKey,
    KeySet,
    parse_jwks,
)
from heddle.auth.session_claims import SessionClaims
from heddle.auth.session_errors import TokenError
from heddle.auth.verified_tokens import VerifiedToken, token_digest
from heddle.ttl_cache import TTLCache

__all__ = ["KeyInfo", "SessionClaims", "SessionTokenVerifier", "TokenError", "looks_like_jwt"]

DEFAULT_AUDIENCE = "service"
DEFAULT_MAX_TOKEN_BYTES = 8192
_B64URL = re.compile(r"^[A-Za-z0-9_-]+={0,2}$")
_MAX_HEADER_SEGMENT = 4096
_PRINTABLE_ALG = re.compile(r"^[A-Za-z0-9+_-]{1,16}$")


def looks_like_jwt(bearer: str) -> bool:
    """True when `bearer` has the JWT compact form: three dot-separated base64url segments whose
    header decodes to a JSON object with `alg`. Such a bearer is direct mode, anything else relay.

    Cheap and never raises. The signature segment may be empty, so that an `alg: none` token is
    classified as a JWT and refused as one, rather than as a malformed secret.
    """
    try:
        if not isinstance(bearer, str):
            return False
        parts = bearer.split(".", 3)
        if len(parts) != 3 or not parts[1] or len(parts[0]) > _MAX_HEADER_SEGMENT:
            return False
        header = _json_segment(parts[0])
        return isinstance(header, dict) and "alg" in header
    except (ValueError, binascii.Error, RecursionError):
        return False


def _json_segment(segment: str) -> Any:
    """Decode one base64url JSON segment; ValueError (or binascii.Error) when it is not one."""
    if not _B64URL.match(segment):
        raise ValueError("not base64url")
    unpadded = segment.rstrip("=")
    return json.loads(base64.urlsafe_b64decode(unpadded + "=" * (-len(unpadded) % 4)))


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What the verifier needs to know about the API key named by a token's `iss`."""

    key_id: str
    workspace_id: str
    active: bool
    jwks_uri: str | None
    jwks_json: dict[str, Any] | None


KeyLookup = Callable[[str], Awaitable[KeyInfo | None]]


class SessionTokenVerifier:
    """Verifies session tokens; data comes through `key_lookup` and `jwks_cache`, so it holds no
    database code and one instance can be shared by every request of a process.

    `leeway` is the clock skew allowed on `exp`, `nbf` and `iat`; `max_lifetime` refuses tokens
    whose `exp` is further ahead than that (plus the leeway). `verified_cache_size` tokens that
    passed are remembered so that their signature is not checked again on every request
    (heddle.auth.verified_tokens says what a remembered token is still checked for; 0 disables).
    """

    def __init__(
        self,
        key_lookup: KeyLookup | None,
        jwks_cache: JwksCache,
        *,
        audience: str = DEFAULT_AUDIENCE,
        leeway: float = 5.0,
        max_lifetime: float = 900.0,
        max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
        pasted_jwks_cache_size: int = 1024,
        verified_cache_size: int = 10_000,
    ):
        if (leeway < 0 or max_lifetime <= 0 or max_token_bytes < 256 or pasted_jwks_cache_size < 1
                or verified_cache_size < 0):
            raise ValueError("leeway must be >= 0, max_lifetime > 0, max_token_bytes >= 256, "
                             "pasted_jwks_cache_size >= 1 and verified_cache_size >= 0")
        self._key_lookup = key_lookup
        self._jwks_cache = jwks_cache
        self._audience = audience
        self._leeway = leeway
        self._max_lifetime = max_lifetime
        self._max_token_bytes = max_token_bytes
        self._pasted_size = pasted_jwks_cache_size
        self._pasted: OrderedDict[str, KeySet] = OrderedDict()
        # Any token is expired `max_lifetime` + leeway after it was verified; the TTL only
        # frees memory, as every use checks `exp` anyway. Size 0: a cache that stores nothing.
        self._verified: TTLCache[VerifiedToken] = TTLCache(
            max_lifetime + 2 * leeway if verified_cache_size else 0,
            max_entries=max(verified_cache_size, 1))

    async def verify(self, token: str, *, key_lookup: KeyLookup | None = None) -> SessionClaims:
        """Verify `token` completely; raises TokenError naming the first check that failed.

        `key_lookup` overrides the constructor's for this call, e.g. one bound to the request's
        database session, while the verifier (and its parsed-JWKS caches) stays shared.
        """
        lookup = key_lookup or self._key_lookup
        if lookup is None:
            raise TypeError("no key_lookup: pass one to the constructor or to verify()")
        if not isinstance(token, str) or not token:
            raise TokenError("the bearer is empty or not text")
        if len(token) > self._max_token_bytes:
            raise TokenError(f"the token is longer than {self._max_token_bytes} bytes")
        digest = token_digest(token)
        remembered = self._verified.get(digest)
        if remembered is not None:
            try:
                claims = await self._still_valid(remembered, lookup)
            except TokenError:
                self._verified.discard(digest)
                raise
            if claims is not None:
                return claims
            self._verified.discard(digest)  # its key changed: verify the signature again

        header, unverified = _peek(token)
        alg = _algorithm(header)
        kid = _kid(header)
        key_id = session_claims.issuer_key_id(unverified)

        info = _active_key(await lookup(key_id), key_id)
        signing_key = await self._signing_key(info, kid)
        claims = session_claims.decode_verified(
            token, signing_key.for_alg(alg), alg=alg, issuer=key_id, audience=self._audience,
            leeway=self._leeway)
        exp = session_claims.numeric_date(claims, "exp")
        if exp is None:  # PyJWT requires it; kept explicit so the type is narrowed for sure
            raise TokenError("the exp claim is missing")
        iat = session_claims.numeric_date(claims, "iat")
        nbf = session_claims.numeric_date(claims, "nbf")
        session_claims.check_lifetime(exp, max_lifetime=self._max_lifetime, leeway=self._leeway)
        verified = SessionClaims(
            workspace_id=info.workspace_id,
            key_id=key_id,
            subject=session_claims.subject(claims),
            conn=session_claims.connection(claims),
            expires_at=dt.datetime.fromtimestamp(exp, dt.UTC),
            issued_at=session_claims.utc(iat),
            audience=session_claims.audience(claims),
            kid=kid,
            alg=alg,
            claims=MappingProxyType(claims),
        )
        self._verified.set(digest, VerifiedToken(verified, signing_key, exp=exp, nbf=nbf, iat=iat))
        return verified

    async def _still_valid(self, remembered: VerifiedToken, lookup: KeyLookup) -> SessionClaims | None:
        """The claims of a token accepted before when it is still valid now; None when its key
        is no longer the one that verified it (then the caller verifies it again from scratch).

        Raises the same TokenError a full verification would for a revoked key or the clock.
        """
        claims = remembered.claims
        info = _active_key(await lookup(claims.key_id), claims.key_id)
        if info.workspace_id != claims.workspace_id:
            return None
        if await self._signing_key(info, claims.kid) is not remembered.key:
            return None
        now = time.time()
        if remembered.exp <= now - self._leeway:
            raise TokenError("the token has expired (exp is in the past)")
        for name, value in (("nbf", remembered.nbf), ("iat", remembered.iat)):
            if value is not None and value > now + self._leeway:
                raise TokenError(f"the token is not valid yet ({name} is in the future)")
        session_claims.check_lifetime(remembered.exp, max_lifetime=self._max_lifetime, leeway=self._leeway)
        return claims

    async def _signing_key(self, info: KeyInfo, kid: str) -> JwksKey:
        """The key `kid` from the pasted JWKS when there is one, else from the JWKS URI."""
        if info.jwks_json is not None:
            key = self._pasted_key_set(info.jwks_json).get(kid)
            if key is None:
                raise TokenError(f"unknown kid {kid[:64]!r}: the workspace's pasted JWKS has "
                                 "no such key")
            return key
        if info.jwks_uri:
            return await self._jwks_cache.get_key(info.jwks_uri, kid)
        raise TokenError("the workspace has no JWKS configured (paste one or set its JWKS URI)")

    def _pasted_key_set(self, document: Any) -> KeySet:
        try:
            fingerprint = json.dumps(document, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            raise TokenError("the workspace's pasted JWKS is not JSON data") from None
        key_set = self._pasted.get(fingerprint)
        if key_set is not None:
            self._pasted.move_to_end(fingerprint)
            return key_set
        try:
            key_set = parse_jwks(document, source="pasted")
        except InvalidJwks as exc:
            raise TokenError(f"the workspace's pasted JWKS is invalid: {exc}") from None
        self._pasted[fingerprint] = key_set
        if len(self._pasted) > self._pasted_size:
            self._pasted.popitem(last=False)
        return key_set


def _active_key(info: KeyInfo | None, key_id: str) -> KeyInfo:
    if info is None or info.key_id != key_id:
        raise TokenError(f"unknown API key {key_id} in iss")
    if not info.active:
        raise TokenError(f"the API key {key_id} in iss was revoked")
    return info


def _peek(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and payload before verification, read only to choose the key.

    PyJWT parses the token again when it verifies it; this cheap read lets the refusals that
    need no key (alg, kid, iss) come first, without paying PyJWT's slower parse three times.
    """
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("the token is malformed (a JWT has three dot-separated segments)")
    try:
        header, payload = _json_segment(parts[0]), _json_segment(parts[1])
    except (ValueError, binascii.Error, RecursionError):
        raise TokenError("the token is malformed (a segment is not base64url-encoded "
                         "JSON)") from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise TokenError("the token is malformed (header and payload must be JSON objects)")
    return header, payload


def _algorithm(header: dict[str, Any]) -> str:
    alg = header.get("alg")
    if alg in ALLOWED_ALGORITHMS:
        return alg
    if not isinstance(alg, str) or not alg:
        raise TokenError("the header has no alg")
    if alg.lower() == "none":
        raise TokenError("unsigned tokens (alg none) are refused")
    if alg.upper().startswith("HS"):
        raise TokenError("symmetric algorithms (HS*) are refused; sign with "
                         + ", ".join(ALLOWED_ALGORITHMS))
    shown = alg if _PRINTABLE_ALG.match(alg) else "that value"
    raise TokenError(f"alg {shown} is not allowed; use one of {', '.join(ALLOWED_ALGORITHMS)}")


def _kid(header: dict[str, Any]) -> str:
    kid = header.get("kid")
    if kid is None or kid == "":
        raise TokenError("the header has no kid (it must name the signing key in the JWKS)")
    if not isinstance(kid, str) or len(kid) > MAX_KID_LENGTH:
        raise TokenError(f"the header kid must be a string of at most {MAX_KID_LENGTH} characters")
    return kid
