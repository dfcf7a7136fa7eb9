"""A verified direct-mode session token (`SessionClaims`) and the claim rules checked once PyJWT
has verified its signature.

PyJWT checks the signature, `exp`, `nbf`, `iat` and `aud`; the rules here are Heddle's own
(issuer form, lifetime cap, subject and connection shape) plus a stricter reading of the time
claims than PyJWT's (which would take `"exp": "1700000000"` or `true`).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import time
import unicodedata
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt
import structlog
from jwt import exceptions as jwt_errors

from heddle.auth.secrets import is_well_formed_secret, secret_hint
from heddle.auth.session_errors import TokenError
from heddle.auth.subjects import subject_problem


@dataclass(frozen=True, slots=True)
class SessionClaims:
    """A verified session token."""

    workspace_id: str
    key_id: str  # `iss`
    subject: str  # `sub`
    conn: uuid.UUID | None
    expires_at: dt.datetime
    issued_at: dt.datetime | None
    audience: tuple[str, ...]
    kid: str
    alg: str
    claims: Mapping[str, Any]  # every verified claim, read-only (the caller's own ones too)


# The public id of an API key, as heddle.ids.key_id() makes it (kept a little looser).
_KEY_ID = re.compile(r"^key_[A-Za-z0-9]{1,64}$")
_SECRET_PREFIX = re.compile(r"sk_(live|test)_")
_CANONICAL_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# NumericDate bounds: 1970 .. 9999-12-31, so a datetime can always be built from it.
_MAX_NUMERIC_DATE = 253402300799


def issuer_key_id(unverified: dict[str, Any]) -> str:
    """The `iss` claim as an API key public id; refuses a secret without ever echoing it."""
    iss = unverified.get("iss")
    if iss is None:
        raise TokenError("the iss claim is missing (it must be the API key public id, key_…)")
    if not isinstance(iss, str):
        raise TokenError("the iss claim must be a string (the API key public id, key_…)")
    if iss.startswith("sk_") or _SECRET_PREFIX.search(iss):
        structlog.get_logger("heddle.auth.session").warning(
            "session_token_secret_as_iss",
            secret_hint=secret_hint(iss) if is_well_formed_secret(iss) else None)
        raise TokenError("the iss claim holds a workspace secret key; iss must be the API key "
                         "public id (key_…). Never put the secret in a token: it has reached "
                         "a browser, so revoke that key and create a new one")
    if not _KEY_ID.match(iss):
        raise TokenError("the iss claim must be an API key public id (key_…)")
    return iss


def decode_verified(token: str, key: jwt.PyJWK, *, alg: str, issuer: str, audience: str,
                    leeway: float) -> dict[str, Any]:
    """Verify the signature and the registered claims with PyJWT; TokenError naming the check."""
    try:
        return jwt.decode(
            token, key=key, algorithms=[alg], audience=audience, issuer=issuer, leeway=leeway,
            options={"require": ["exp", "iss", "aud", "sub"], "enforce_minimum_key_length": True},
        )
    except jwt_errors.InvalidSignatureError:
        raise TokenError("signature verification failed (the token was altered or signed "
                         "with another key)") from None
    except jwt_errors.ExpiredSignatureError:
        raise TokenError("the token has expired (exp is in the past)") from None
    except jwt_errors.ImmatureSignatureError as exc:
        claim = "nbf" if "nbf" in str(exc) else "iat"
        raise TokenError(f"the token is not valid yet ({claim} is in the future)") from None
    except jwt_errors.MissingRequiredClaimError as exc:
        raise TokenError(f"the {exc.claim} claim is missing") from None
    except jwt_errors.InvalidAudienceError:
        raise TokenError(f"the aud claim must contain {audience!r} (a string or an array of "
                         "strings)") from None
    except jwt_errors.InvalidIssuerError:
        raise TokenError("the iss claim does not match the signing key's API key") from None
    except jwt_errors.InvalidSubjectError:
        raise TokenError("the sub claim must be a string") from None
    except jwt_errors.InvalidIssuedAtError:
        raise TokenError("the iat claim must be a number (Unix seconds)") from None
    except jwt_errors.InvalidAlgorithmError:
        raise TokenError(f"the key cannot verify {alg}") from None
    except jwt_errors.InvalidKeyError:
        raise TokenError("the workspace's JWKS key is too weak or unusable") from None
    except jwt_errors.DecodeError as exc:
        raise TokenError(f"the token is malformed ({str(exc)[:120]})") from None
    except jwt_errors.PyJWTError as exc:
        raise TokenError(f"the token is invalid ({str(exc)[:120] or type(exc).__name__})") from None
    except (ValueError, TypeError, OverflowError, RecursionError):
        raise TokenError("the token is malformed") from None


def numeric_date(claims: dict[str, Any], name: str) -> float | None:
    """A NumericDate claim as a number (None when absent); refuses strings, booleans, NaN."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TokenError(f"the {name} claim must be a number (Unix seconds)")
    if not math.isfinite(value) or not 0 <= value <= _MAX_NUMERIC_DATE:
        raise TokenError(f"the {name} claim is out of range")
    return float(value)


def check_lifetime(exp: float, *, max_lifetime: float, leeway: float) -> None:
    ahead = exp - time.time()
    if ahead > max_lifetime + leeway:
        raise TokenError(f"exp is {ahead:.0f} s ahead; a session token may live at most "
                         f"{max_lifetime:.0f} s (mint short-lived tokens, about 120 s)")


def subject(claims: dict[str, Any]) -> str:
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub.strip():
        raise TokenError("the sub claim must be a non-empty string (the caller's user id)")
    # The same canonical form as a relay subject (NFC, nothing invisible, the same length limit),
    # without the `<channel>:` form: a browser's user id is used as is (docs/decisions.md).
    sub = unicodedata.normalize("NFC", sub)
    if problem := subject_problem(sub, relay_form=False):
        raise TokenError(f"the sub claim is not a usable subject: {problem}")
    return sub


def connection(claims: dict[str, Any]) -> uuid.UUID | None:
    if "conn" not in claims:
        return None
    conn = claims["conn"]
    if not isinstance(conn, str) or not _CANONICAL_UUID.match(conn):
        raise TokenError("the conn claim must be a connection id in UUID form "
                         "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), not a name or URL")
    return uuid.UUID(conn)


def audience(claims: dict[str, Any]) -> tuple[str, ...]:
    aud = claims["aud"]  # PyJWT has checked it is a string or a list of strings
    return (aud,) if isinstance(aud, str) else tuple(aud)


def utc(seconds: float | None) -> dt.datetime | None:
    return None if seconds is None else dt.datetime.fromtimestamp(seconds, dt.UTC)
