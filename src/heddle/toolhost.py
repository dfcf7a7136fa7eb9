"""Verify the calls Heddle makes to your backend: hosted tool calls and the relay mint request.

This module is public and self-contained (standard library + PyJWT only) so that it can be
copied into a tool host that does not install Heddle.

Every call carries ``Service-Signature: t=<unix_seconds>,v1=<hex>``:

* ``body_digest`` is ``base64(SHA-256(raw body))``; for an **empty body the digest is the empty
  string** (the signed string then ends with ``.``), which is how the spec's "an empty body is
  the empty string" is read here.
* ``path`` is the request target exactly as sent on the request line: the percent-encoded path
  plus ``?query`` when the URL has a query (ASGI: ``raw_path`` + ``"?"`` + ``query_string``).
* The signed string is ``<t>.<METHOD>.<path>.<body_digest>`` and ``v1`` is the lowercase hex
  HMAC-SHA256 of it under the workspace request secret (UTF-8 encoded).

Tool calls also carry the session token as ``Authorization: Bearer``; check it with
``verify_session_token`` against your own public key(s), for your audience.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import io
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import jwt

SIGNATURE_HEADER = "Service-Signature"
DEFAULT_TOLERANCE = 300
ALLOWED_TOKEN_ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512",
                            "PS256", "PS384", "PS512")
MAX_SIGNATURE_HEADER_LENGTH = 1024
MAX_SIGNATURES = 8
MAX_TOKEN_LENGTH = 16 * 1024
DEFAULT_MAX_BODY_BYTES = 1024 * 1024

_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_V1 = re.compile(r"[0-9a-fA-F]{64}")
_OTHER_SCHEME = re.compile(r"v[0-9]{1,3}")

Secrets = str | Sequence[str]
Keys = Mapping[str, Any]


class VerificationError(Exception):
    """A request that must be refused; ``code`` is stable, ``message`` is safe to return."""

    status = 401

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class SignatureError(VerificationError, ValueError):
    """The ``Service-Signature`` header is missing, malformed, stale, wrong or replayed."""


class TokenError(VerificationError):
    """The bearer session token is missing or does not verify."""


# --- the signature scheme -------------------------------------------------------------------

def body_digest(body: bytes) -> str:
    """base64(SHA-256(body)); the empty string for an empty body."""
    if not body:
        return ""
    return base64.b64encode(hashlib.sha256(body).digest()).decode("ascii")


def signed_payload(t: int, method: str, path: str, body: bytes) -> bytes:
    return f"{t}.{method.upper()}.{path}.{body_digest(body)}".encode()


def compute_signature(secret: str, t: int, method: str, path: str, body: bytes) -> str:
    if not isinstance(secret, str) or not secret:
        raise ValueError("the request secret must be a non-empty string")
    return hmac.new(secret.encode(), signed_payload(t, method, path, body), hashlib.sha256).hexdigest()


def attachment_url_signature(secret: str, path: str, expires: int) -> str:
    """The `signature` of a signed attachment URL: the same HMAC as a call's, over
    `<expires>.GET.<path>.` (an empty body), `path` being `/v1/loom/attachments/<id>/content`."""
    return compute_signature(secret, expires, "GET", path, b"")


def verify_attachment_url(url: str, *, request_secret: Secrets, now: float | None = None) -> str:
    """Check a signed attachment URL that Heddle handed to a tool (a parameter with
    `"format": "heddle-attachment"`) before fetching it; returns the attachment id. Raises
    SignatureError when it is not Heddle's, or has expired."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    match = re.fullmatch(r"/v1/loom/attachments/([0-9a-fA-F-]{36})/content", parts.path)
    expires = (query.get("expires") or [""])[0]
    signature = (query.get("signature") or [""])[0]
    if match is None or not _TIMESTAMP.fullmatch(expires) or not _V1.fullmatch(signature):
        raise SignatureError("signature_mismatch", "Not a signed Heddle attachment URL.")
    if int(expires) < (time.time() if now is None else now):
        raise SignatureError("signature_expired", "The attachment URL has expired.")
    secrets = [request_secret] if isinstance(request_secret, str) else list(request_secret)
    if not any(hmac.compare_digest(attachment_url_signature(sec, parts.path, int(expires)), signature.lower())
               for sec in secrets):
        raise SignatureError("signature_mismatch", "The attachment URL's signature does not match.")
    return match.group(1)


def parse_signature_header(value: str) -> tuple[int, list[str]]:
    """Parse ``t=<digits>,v1=<hex>[,v1=<hex>…]``; other ``vN`` schemes are ignored."""
    if not isinstance(value, str) or not value.strip():
        raise SignatureError("signature_malformed", "Service-Signature is empty.")
    if len(value) > MAX_SIGNATURE_HEADER_LENGTH:
        raise SignatureError("signature_malformed", "Service-Signature is too long.")
    t: int | None = None
    signatures: list[str] = []
    for item in value.split(","):
        key, sep, val = item.strip().partition("=")
        if not sep or not key or not val:
            raise SignatureError("signature_malformed", "Service-Signature items must be key=value.")
        if key == "t":
            if t is not None or not _TIMESTAMP.fullmatch(val):
                raise SignatureError("signature_malformed", "t must appear once, as unix seconds.")
            t = int(val)
        elif key == "v1":
            if not _V1.fullmatch(val):
                raise SignatureError("signature_malformed", "v1 must be 64 hex characters.")
            signatures.append(val.lower())
            if len(signatures) > MAX_SIGNATURES:
                raise SignatureError("signature_malformed", "too many v1 signatures.")
        elif not _OTHER_SCHEME.fullmatch(key):
            raise SignatureError("signature_malformed", f"unknown Service-Signature item {key[:20]!r}.")
    if t is None or not signatures:
        raise SignatureError("signature_malformed", "Service-Signature needs t and v1.")
    return t, signatures


def request_target(raw_path: bytes | str, query_string: bytes | str = b"") -> str:
    """The signed path for a server that exposes the raw path and query separately."""
    path = raw_path.decode("latin-1") if isinstance(raw_path, bytes) else raw_path
    query = query_string.decode("latin-1") if isinstance(query_string, bytes) else query_string
    return f"{path}?{query}" if query else path


class ReplayCache:
    """Remembers accepted ``(t, v1)`` pairs for the tolerance window so a replay is refused.

    A Heddle process never sends the same signature twice: a repeated identical request (a
    retry, a second mint for the same subject) is signed with a later ``t``. Thread-safe;
    bounded by ``max_entries`` (the oldest entries are dropped first).
    """

    def __init__(self, tolerance: int = DEFAULT_TOLERANCE, max_entries: int = 100_000):
        self.tolerance = tolerance
        self.max_entries = max_entries
        self._seen: OrderedDict[tuple[int, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def check_and_remember(self, t: int, signature: str, now: float | None = None) -> bool:
        """True when the pair is new (and is now remembered); False for a replay."""
        now = time.time() if now is None else now
        key = (t, signature)
        with self._lock:
            while self._seen and next(iter(self._seen.values())) < now:
                self._seen.popitem(last=False)
            if key in self._seen:
                return False
            self._seen[key] = t + self.tolerance + 1
            while len(self._seen) > self.max_entries:
                self._seen.popitem(last=False)
            return True

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    def __len__(self) -> int:
        return len(self._seen)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    for key, val in headers.items():
        if key.lower() == lowered:
            return val
    return None


def verify_request(*, method: str, path: str, body: bytes, headers: Mapping[str, str],
                   request_secret: Secrets, now: float | None = None,
                   tolerance: int = DEFAULT_TOLERANCE,
                   replay_cache: ReplayCache | None = None) -> int:
    """Steps 1-5 of the spec; returns the signed timestamp or raises ``SignatureError``.

    ``request_secret`` may be a list during a secret rotation (any one may match).
    """
    value = _header(headers, SIGNATURE_HEADER)
    if value is None:
        raise SignatureError("signature_missing", "Service-Signature header is missing.")
    t, signatures = parse_signature_header(value)
    now = time.time() if now is None else now
    if abs(now - t) > tolerance:
        raise SignatureError("signature_expired",
                             f"Service-Signature timestamp is outside the {tolerance} s tolerance.")
    accepted = [request_secret] if isinstance(request_secret, str) else list(request_secret)
    if not accepted:
        raise ValueError("no request secret configured")
    expected = [compute_signature(secret, t, method, path, body) for secret in accepted]
    matched = None
    for candidate in signatures:
        for good in expected:
            if hmac.compare_digest(candidate, good):
                matched = candidate
    if matched is None:
        raise SignatureError("signature_mismatch", "Service-Signature does not match this request.")
    if replay_cache is not None and not replay_cache.check_and_remember(t, matched, now):
        raise SignatureError("signature_replayed", "This Service-Signature was already used.")
    return t


# --- the bearer session token (step 6) ------------------------------------------------------

def bearer_token(headers: Mapping[str, str]) -> str:
    value = _header(headers, "Authorization")
    if not value:
        raise TokenError("token_missing", "Authorization: Bearer <session token> is missing.")
    scheme, _, token = value.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise TokenError("token_invalid", "Authorization must be 'Bearer <session token>'.")
    return token


def _signing_key(kid: str, alg: str, jwks: Any, public_keys: Keys | None) -> Any:
    if public_keys is not None:
        if kid not in public_keys:
            raise TokenError("token_invalid", "The token's kid names no configured public key.")
        return public_keys[kid]
    if isinstance(jwks, jwt.PyJWKClient):
        return jwks.get_signing_key(kid).key
    matches = [key for key in jwks["keys"] if isinstance(key, Mapping) and key.get("kid") == kid]
    if len(matches) != 1:
        raise TokenError("token_invalid", "The token's kid names no single key in the JWKS.")
    data = dict(matches[0])
    if data.get("alg", alg) != alg or data.get("use", "sig") != "sig":
        raise TokenError("token_invalid", "The JWKS key is not for this token's alg.")
    return jwt.PyJWK(data, algorithm=alg).key


def _check_key_source(jwks: Any, public_keys: Keys | None) -> None:
    if (jwks is None) == (public_keys is None):
        raise ValueError("give exactly one of jwks or public_keys")
    if jwks is not None and not isinstance(jwks, jwt.PyJWKClient) and not (
            isinstance(jwks, Mapping) and isinstance(jwks.get("keys"), list)):
        raise ValueError("jwks must be a JWKS document {'keys': [...]} or a jwt.PyJWKClient")


def verify_session_token(token: str, *, audience: str, jwks: Any = None,
                         public_keys: Keys | None = None, issuer: str | None = None,
                         leeway: float = 0) -> dict[str, Any]:
    """Check the bearer token's signature (RS/ES/PS only), ``exp``, ``sub`` and ``aud``.

    Give either ``jwks`` (a JWKS document ``{"keys": [...]}``, or a ``jwt.PyJWKClient`` for a
    URL) or ``public_keys`` (``{kid: PEM or key object}``).
    """
    _check_key_source(jwks, public_keys)
    if not audience:
        raise ValueError("audience is required")
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
        raise TokenError("token_invalid", "The session token is empty or too long.")
    try:
        header = jwt.get_unverified_header(token)
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALLOWED_TOKEN_ALGORITHMS:
            raise TokenError("token_invalid", "The token must be signed with RS*, ES* or PS*.")
        if not isinstance(kid, str) or not kid:
            raise TokenError("token_invalid", "The token header has no kid.")
        key = _signing_key(kid, alg, jwks, public_keys)
        required = ["exp", "sub", "aud"] + (["iss"] if issuer else [])
        claims = jwt.decode(token, key, algorithms=[alg], audience=audience, issuer=issuer,
                            leeway=leeway, options={"require": required})
    except TokenError:
        raise
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        raise TokenError("token_invalid", f"The session token does not verify: {exc}") from None
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise TokenError("token_invalid", "The token's sub must be a non-empty string.")
    return claims


def verify(*, method: str, path: str, body: bytes, headers: Mapping[str, str],
           request_secret: Secrets, audience: str | None = None, jwks: Any = None,
           public_keys: Keys | None = None, issuer: str | None = None,
           require_token: bool = True, now: float | None = None,
           tolerance: int = DEFAULT_TOLERANCE, replay_cache: ReplayCache | None = None,
           leeway: float = 0) -> dict[str, Any]:
    """All six steps; returns the token's claims (``{}`` when ``require_token`` is False)."""
    verify_request(method=method, path=path, body=body, headers=headers,
                   request_secret=request_secret, now=now, tolerance=tolerance,
                   replay_cache=replay_cache)
    if not require_token:
        return {}
    if audience is None:
        raise ValueError("audience is required to verify the session token")
    return verify_session_token(bearer_token(headers), audience=audience, jwks=jwks,
                                public_keys=public_keys, issuer=issuer, leeway=leeway)


# --- framework adapters ---------------------------------------------------------------------

def _error_body(code: str, message: str) -> bytes:
    return json.dumps({"status": "error", "error": {"code": code, "message": message}}).encode()


class ToolHostVerifier:
    """ASGI middleware: verifies every HTTP request, answers 401 JSON on failure.

    The verified body is passed on to the app unchanged and the token claims are put in
    ``scope["state"]["toolhost_claims"]`` (Starlette: ``request.state.toolhost_claims``).
    ``signature_only_paths`` (your mint endpoint) skip the token check, as does every path
    when ``require_token`` is False; ``exempt_paths`` (health checks) skip verification.
    """

    def __init__(self, app: Callable[..., Awaitable[None]], *, request_secret: Secrets,
                 audience: str | None = None, jwks: Any = None, public_keys: Keys | None = None,
                 issuer: str | None = None, tolerance: int = DEFAULT_TOLERANCE,
                 replay_cache: ReplayCache | None = None,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 signature_only_paths: Collection[str] = (), exempt_paths: Collection[str] = (),
                 require_token: bool = True, leeway: float = 0):
        if not request_secret:
            raise ValueError("request_secret is required")
        if require_token or audience is not None:
            if not audience:
                raise ValueError("audience is required to verify session tokens")
            _check_key_source(jwks, public_keys)
        self.app = app
        self.options = {"request_secret": request_secret, "audience": audience, "jwks": jwks,
                        "public_keys": public_keys, "issuer": issuer, "tolerance": tolerance,
                        "replay_cache": replay_cache, "leeway": leeway}
        self.max_body_bytes = max_body_bytes
        self.signature_only_paths = frozenset(signature_only_paths)
        self.exempt_paths = frozenset(exempt_paths)
        self.require_token = require_token
        self._blocking_keys = isinstance(jwks, jwt.PyJWKClient)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http" or scope["path"] in self.exempt_paths:
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope["headers"]:
            name = raw_name.decode("latin-1").lower()
            if name in headers and name in ("service-signature", "authorization"):
                return await self._refuse(send, 401, "signature_malformed",
                                          f"More than one {name} header.")
            headers[name] = raw_value.decode("latin-1")
        body = await self._read_body(receive, headers, send)
        if body is None:
            return
        target = request_target(scope.get("raw_path") or scope["path"].encode(),
                                scope.get("query_string", b""))

        def check() -> dict[str, Any]:
            return verify(method=scope["method"], path=target, body=body, headers=headers,
                          require_token=self.require_token
                          and scope["path"] not in self.signature_only_paths,
                          **self.options)

        try:
            claims = await asyncio.to_thread(check) if self._blocking_keys else check()
        except VerificationError as exc:
            return await self._refuse(send, exc.status, exc.code, exc.message)
        scope = dict(scope)
        scope["state"] = {**(scope.get("state") or {}), "toolhost_claims": claims}
        await self.app(scope, _replaying(body, receive), send)

    async def _read_body(self, receive: Callable, headers: Mapping[str, str],
                         send: Callable) -> bytes | None:
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._refuse(send, 413, "payload_too_large", "The request body is too large.")
            return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._refuse(send, 413, "payload_too_large", "The request body is too large.")
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    @staticmethod
    async def _refuse(send: Callable, status: int, code: str, message: str) -> None:
        payload = _error_body(code, message)
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
            (b"www-authenticate", b'Bearer realm="toolhost"')]})
        await send({"type": "http.response.body", "body": payload})


def _replaying(body: bytes, receive: Callable) -> Callable:
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def verify_wsgi(environ: dict, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                **options: Any) -> dict[str, Any]:
    """Verify a WSGI request in place; ``wsgi.input`` is rewound so the app can read the body.

    Takes the keyword arguments of ``verify``. The signed path is ``RAW_URI``/``REQUEST_URI``
    when the server provides it, else rebuilt from ``SCRIPT_NAME``, ``PATH_INFO`` and
    ``QUERY_STRING``. Raises ``VerificationError`` (``.status`` is 401 or 413).
    """
    declared = environ.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit():
        raise SignatureError("signature_malformed", "Content-Length is not a number.")
    if int(declared) > max_body_bytes:
        error = VerificationError("payload_too_large", "The request body is too large.")
        error.status = 413
        raise error
    body = environ["wsgi.input"].read(int(declared)) if int(declared) else b""
    environ["wsgi.input"] = io.BytesIO(body)
    headers = {key[5:].replace("_", "-"): value for key, value in environ.items()
               if key.startswith("HTTP_")}
    path = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not path:
        raw = (environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")).encode("latin-1")
        path = request_target(quote(raw, safe="/:@!$&'()*+,;=-._~"), environ.get("QUERY_STRING", ""))
    return verify(method=environ["REQUEST_METHOD"], path=path, body=body, headers=headers,
                  **options)
