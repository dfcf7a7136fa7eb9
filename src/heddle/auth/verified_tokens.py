"""A bounded memory of session tokens whose signature has already been verified.

A browser sends the same session token with every request for its whole life (up to 900 s),
and checking an ES256 signature costs more than the rest of a read request's authentication.
So, like Envoy's `jwt_authn` cache, the verifier remembers a token it accepted, keyed by the
token's SHA-256, together with the very key object that verified it.

A hit is not a blind pass. The verifier still looks the API key up (revocation), still resolves
the token's `kid` in the workspace's current key set and requires the *same* parsed key (a key
removed from the JWKS, a pasted JWKS replaced, or a JWKS refetched after its TTL all give new
key objects, hence a full verification), and still checks `exp`, `nbf`/`iat` and the lifetime
limit against the clock. What a hit skips is only the signature check and the re-reading of
claims that cannot have changed. Only accepted tokens are stored, so a flood of bad tokens
cannot fill it; only the caller's backend can mint tokens that get in. The memory itself is a
`heddle.ttl_cache.TTLCache` whose TTL outlasts any token's life.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from heddle.auth.jwks_keyset import JwksKey
    from heddle.auth.session_claims import SessionClaims


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    claims: SessionClaims
    key: JwksKey  # the parsed key that verified the signature; compared by identity on a hit
    exp: float
    nbf: float | None
    iat: float | None


def token_digest(token: str) -> bytes:
    """The key a verified token is remembered by (never the token itself)."""
    return hashlib.sha256(token.encode()).digest()
