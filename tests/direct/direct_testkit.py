"""Helpers for the direct-mode tests: a real JWKS server, signing keys, and token forging.

Everything here is real: the JWKS server is `http.server` on a loopback port, keys come from
`cryptography`, tokens are signed by PyJWT (or, for forgeries PyJWT refuses to make, by
`hmac` over the exact JWS signing input).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization

from heddle.auth.jwk_keys import generate_keypair, load_private_key
from heddle.auth.session_tokens import KeyInfo
from support.net import wait_started

KEY_ID = "key_0123456789abcdefghij"
WORKSPACE_ID = "ws_0123456789abcdefghij"
ALL_ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512",
                  "PS256", "PS384", "PS512")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64json(value: Any) -> str:
    return b64url(json.dumps(value, separators=(",", ":")).encode())


@dataclass
class SigningKey:
    alg: str
    kid: str
    private_key: Any
    private_pem: bytes
    jwk: dict[str, Any]  # public

    @property
    def public_pem(self) -> bytes:
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def make_signing_key(alg: str, kid: str | None = None) -> SigningKey:
    pem, jwks = generate_keypair(alg, kid or f"{alg.lower()}-test", rsa_bits=2048)
    jwk = jwks["keys"][0]
    return SigningKey(alg, jwk["kid"], load_private_key(pem), pem, jwk)


def claims(**overrides: Any) -> dict[str, Any]:
    """Valid claims; pass name=None to drop a claim."""
    now = int(time.time())
    base: dict[str, Any] = {"iss": KEY_ID, "sub": "web:u_123", "aud": ["service"],
                            "iat": now, "exp": now + 120}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def sign(key: SigningKey, payload: dict[str, Any] | None = None, *, alg: str | None = None,
         kid: str | None | bool = True, headers: dict[str, Any] | None = None) -> str:
    """A real PyJWT token. kid=True uses the key's kid, None/False leaves it out."""
    extra = dict(headers or {})
    if kid is True:
        extra["kid"] = key.kid
    elif isinstance(kid, str):
        extra["kid"] = kid
    return jwt.encode(payload if payload is not None else claims(), key.private_key,
                      algorithm=alg or key.alg, headers=extra)


def sign_raw(key: SigningKey, payload: Any) -> str:
    """Sign any JSON value as the payload (PyJWT's encode refuses e.g. a non-string iss)."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    return jwt.PyJWS().encode(body, key.private_key, algorithm=key.alg,
                              headers={"kid": key.kid, "typ": "JWT"})


def forge_hs256(secret: bytes, payload: dict[str, Any], kid: str) -> str:
    """An HS256 token keyed with `secret` (e.g. an RSA public key PEM: the classic confusion
    attack). PyJWT refuses to use a PEM as an HMAC key, so sign the JWS input directly."""
    signing_input = f"{b64json({'alg': 'HS256', 'typ': 'JWT', 'kid': kid})}.{b64json(payload)}"
    digest = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(digest)}"


def unsigned(payload: dict[str, Any], kid: str, alg: str = "none") -> str:
    return f"{b64json({'alg': alg, 'typ': 'JWT', 'kid': kid})}.{b64json(payload)}."


class FakeClock:
    """A monotonic clock the cache tests move by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Lookup:
    """An in-memory `key_lookup`; counts calls so tests can prove what happened before it."""

    def __init__(self) -> None:
        self.keys: dict[str, KeyInfo] = {}
        self.calls = 0

    def add(self, key_id: str = KEY_ID, *, workspace_id: str = WORKSPACE_ID, active: bool = True,
            jwks_uri: str | None = None, jwks_json: dict[str, Any] | None = None) -> KeyInfo:
        info = KeyInfo(key_id, workspace_id, active, jwks_uri, jwks_json)
        self.keys[key_id] = info
        return info

    async def __call__(self, key_id: str) -> KeyInfo | None:
        self.calls += 1
        return self.keys.get(key_id)


@dataclass
class JwksServerState:
    documents: dict[str, Any] = field(default_factory=dict)  # path -> JSON value
    hits: Counter[str] = field(default_factory=Counter)
    mode: str = "ok"  # ok | status | invalid_json | huge | huge_chunked | slow
    status: int = 503
    delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _JwksHttpServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        state = self.server.state
        with state.lock:
            state.hits[self.path] += 1
            mode, delay, status = state.mode, state.delay, state.status
            document = state.documents.get(self.path)
        if delay:
            time.sleep(delay)
        if mode == "status":
            return self._send(status, b'{"error":"down"}')
        if mode == "invalid_json":
            return self._send(200, b'{"keys": [')
        if mode == "huge":
            return self._send(200, b'{"keys": [], "pad": "' + b"x" * 300_000 + b'"}')
        if mode == "huge_chunked":
            return self._send_chunked(b"x" * 16384, count=40)
        if document is None:
            return self._send(404, b'{"error":"not found"}')
        self._send(200, json.dumps(document).encode())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_chunked(self, chunk: bytes, count: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for _ in range(count):
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading at its size cap, as it should


class _JwksHttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = JwksServerState()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about clients that hang up (the size-cap and timeout tests do so on purpose)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class JwksServer:
    """A real HTTP server on a loopback port serving JWKS documents, counting requests, and
    switchable to fail in the ways a caller's server fails."""

    def __init__(self) -> None:
        self._httpd = _JwksHttpServer()
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def state(self) -> JwksServerState:
        return self._httpd.state

    def reset(self) -> None:
        self._httpd.state = JwksServerState()

    def url(self, path: str = "/jwks.json") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def publish(self, *jwks: dict[str, Any], path: str = "/jwks.json") -> str:
        with self.state.lock:
            self.state.documents[path] = {"keys": list(jwks)}
        return self.url(path)

    def hits(self, path: str = "/jwks.json") -> int:
        with self.state.lock:
            return self.state.hits[path]

    def fail(self, mode: str, *, status: int = 503) -> None:
        with self.state.lock:
            self.state.mode, self.state.status = mode, status

    def recover(self) -> None:
        self.fail("ok")

    def slow(self, seconds: float) -> None:
        with self.state.lock:
            self.state.delay = seconds

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class UvicornThread:
    """An ASGI app served by a real uvicorn server on a free loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        wait_started(self._server, self._thread, timeout=10)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
