"""A parsed JWKS document: verification keys by `kid`, ready for PyJWT.

Parsing happens once per fetched (or pasted) document so that verifying a token with a warm
cache costs a dictionary lookup, not a key import. Keys Heddle would never accept are skipped
(and logged) instead of failing the whole set, so one bad entry cannot lock a caller out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jwt
import structlog
from cryptography.hazmat.primitives.asymmetric import rsa

from heddle.auth.session_errors import TokenError

ALLOWED_ALGORITHMS: tuple[str, ...] = (
    "RS256", "RS384", "RS512",
    "ES256", "ES384", "ES512",
    "PS256", "PS384", "PS512",
)
MIN_RSA_BITS = 2048
MAX_RSA_BITS = 8192  # bigger keys only make every verification slower
MAX_KEYS_PER_SET = 100
MAX_KID_LENGTH = 256

# ES algorithms are bound to one curve each (RFC 7518 §3.4).
EC_CURVE_FOR_ALG = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
_DEFAULT_ALG_FOR_CURVE = {crv: alg for alg, crv in EC_CURVE_FOR_ALG.items()}
# Members that only a private (or symmetric) JWK carries; publishing them is a key leak.
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})


def key_type_for_alg(alg: str) -> str:
    """`RSA` for RS*/PS*, `EC` for ES*; the caller has checked `alg` is allowed."""
    return "EC" if alg.startswith("ES") else "RSA"


def _log() -> Any:
    # A fresh proxy per call: these events are rare, and it keeps log capture working even
    # when structlog is configured to cache loggers.
    return structlog.get_logger("heddle.auth.jwks")


class JwksKey:
    """One usable public key of a JWKS, with its PyJWT key objects built once per algorithm."""

    __slots__ = ("_by_alg", "_jwk", "crv", "declared_alg", "kid", "kty")

    def __init__(self, jwk_data: dict[str, Any], first: jwt.PyJWK):
        self.kid: str = jwk_data["kid"]
        self.kty: str = jwk_data["kty"]
        self.crv: str | None = jwk_data.get("crv")
        self.declared_alg: str | None = jwk_data.get("alg")
        self._jwk = jwk_data
        self._by_alg: dict[str, jwt.PyJWK] = {first.algorithm_name: first}

    def for_alg(self, alg: str) -> jwt.PyJWK:
        """The PyJWT key to verify a token signed with `alg`, or TokenError if they do not match."""
        ready = self._by_alg.get(alg)
        if ready is not None:
            return ready
        if self.declared_alg is not None and self.declared_alg != alg:
            raise TokenError(f"the key {self.kid!r} is declared for {self.declared_alg} "
                             f"but the token is signed with {alg}")
        expected_kty = key_type_for_alg(alg)
        if self.kty != expected_kty:
            raise TokenError(f"the key {self.kid!r} is an {self.kty} key and cannot verify "
                             f"{alg} (needs an {expected_kty} key)")
        if self.kty == "EC" and EC_CURVE_FOR_ALG[alg] != self.crv:
            raise TokenError(f"the key {self.kid!r} is on curve {self.crv}, but {alg} "
                             f"needs {EC_CURVE_FOR_ALG[alg]}")
        # Same RSA key, another RS/PS digest: import it once for that algorithm too.
        pyjwk = jwt.PyJWK(self._jwk, algorithm=alg)
        self._by_alg[alg] = pyjwk
        return pyjwk


class KeySet(Mapping[str, JwksKey]):
    """The usable keys of one JWKS document, by `kid`."""

    def __init__(self, keys: dict[str, JwksKey], skipped: int = 0):
        self._keys = keys
        self.skipped = skipped

    def __getitem__(self, kid: str) -> JwksKey:
        return self._keys[kid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"KeySet(kids={list(self._keys)!r}, skipped={self.skipped})"


class InvalidJwks(ValueError):
    """The document is not a JWKS at all (as opposed to a JWKS with some unusable keys)."""


def _reject_reason(jwk_data: Any) -> str | None:
    """Why this JWK cannot be used, or None when it can be imported."""
    if not isinstance(jwk_data, dict):
        return "not a JSON object"
    kid = jwk_data.get("kid")
    if not isinstance(kid, str) or not kid or len(kid) > MAX_KID_LENGTH:
        return "missing or invalid kid (tokens must name their key)"
    if _PRIVATE_MEMBERS & jwk_data.keys():
        return "contains private or symmetric key material; publish public keys only"
    kty = jwk_data.get("kty")
    if kty not in ("RSA", "EC"):
        return f"unsupported kty {str(kty)[:16]!r} (only RSA and EC are accepted)"
    use = jwk_data.get("use")
    if use is not None and use != "sig":
        return "use is not 'sig'"
    key_ops = jwk_data.get("key_ops")
    if key_ops is not None and (not isinstance(key_ops, list) or "verify" not in key_ops):
        return "key_ops does not allow 'verify'"
    alg = jwk_data.get("alg")
    if alg is not None and alg not in ALLOWED_ALGORITHMS:
        return f"unsupported alg {str(alg)[:16]!r}"
    if alg is not None and key_type_for_alg(alg) != kty:
        return f"alg {alg} does not fit a {kty} key"
    if kty == "EC":
        crv = jwk_data.get("crv")
        if crv not in _DEFAULT_ALG_FOR_CURVE:
            return f"unsupported curve {str(crv)[:16]!r} (P-256, P-384 or P-521)"
        if alg is not None and EC_CURVE_FOR_ALG[alg] != crv:
            return f"alg {alg} does not fit curve {crv}"
    return None


def _import_key(jwk_data: dict[str, Any]) -> JwksKey:
    """Build the PyJWT key for the JWK's own (or default) algorithm; ValueError if unusable."""
    alg = jwk_data.get("alg")
    if alg is None:
        alg = _DEFAULT_ALG_FOR_CURVE[jwk_data["crv"]] if jwk_data["kty"] == "EC" else "RS256"
    try:
        pyjwk = jwt.PyJWK(jwk_data, algorithm=alg)
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        raise ValueError(f"cannot import the key: {type(exc).__name__}") from None
    if isinstance(pyjwk.key, rsa.RSAPublicKey) and not (
            MIN_RSA_BITS <= pyjwk.key.key_size <= MAX_RSA_BITS):
        raise ValueError(f"RSA key of {pyjwk.key.key_size} bits (allowed: {MIN_RSA_BITS} to "
                         f"{MAX_RSA_BITS})")
    return JwksKey(jwk_data, pyjwk)


def parse_jwks(document: Any, *, source: str) -> KeySet:
    """Parse a JWKS document. Raises InvalidJwks if it is not one; skips (and logs) bad keys.

    `source` names where the document came from (a URI or "pasted"), for the logs only.
    """
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise InvalidJwks('not a JWKS document (expected an object with a "keys" array)')
    entries = document["keys"]
    if len(entries) > MAX_KEYS_PER_SET:
        raise InvalidJwks(f"too many keys ({len(entries)}; at most {MAX_KEYS_PER_SET})")
    keys: dict[str, JwksKey] = {}
    skipped = 0
    for index, jwk_data in enumerate(entries):
        reason = _reject_reason(jwk_data)
        if reason is None:
            try:
                key = _import_key(jwk_data)
            except ValueError as exc:
                reason = str(exc)
            else:
                if key.kid in keys:
                    reason = "duplicate kid (the first key with this kid is used)"
                else:
                    keys[key.kid] = key
                    continue
        skipped += 1
        kid = jwk_data.get("kid") if isinstance(jwk_data, dict) else None
        _log().warning("jwks_key_skipped", source=source, index=index,
                       kid=kid[:MAX_KID_LENGTH] if isinstance(kid, str) else None, reason=reason)
    return KeySet(keys, skipped)
