"""Helpers for the outbound tests: threaded uvicorn servers, a token signer, and an
independent implementation of the signature scheme written from the spec's text."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec

from support.net import bound_socket, wait_started

REQUEST_SECRET = "whsec_test_0123456789abcdef"
AUDIENCE = "payments-api"
ALLOWED_LOOPBACK = ipaddress.ip_address("127.0.0.2")
REPO_ROOT = Path(__file__).resolve().parents[2]


def only_127_0_0_2(address: Any) -> bool:
    """The injected address policy: exactly 127.0.0.2 is allowed, all else refused."""
    return address == ALLOWED_LOOPBACK


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ServerThread:
    def __init__(self, app: Any, host: str = "127.0.0.1", **config: Any):
        self.socket = bound_socket(host)  # bound now: nothing can take the port before uvicorn starts
        self.host, self.port = host, self.socket.getsockname()[1]
        scheme = "https" if "ssl_certfile" in config else "http"
        config = {"log_level": "warning", "lifespan": "off"} | config  # MCP servers need their lifespan
        self.server = uvicorn.Server(uvicorn.Config(
            app, access_log=False, timeout_graceful_shutdown=1, **config))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.url = f"{scheme}://{host}:{self.port}"

    def __enter__(self) -> Self:
        self.thread.start()
        wait_started(self.server, self.thread, timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


@dataclass
class Signer:
    key: ec.EllipticCurvePrivateKey
    kid: str
    jwks: dict[str, Any]

    def token(self, sub: str = "whatsapp:+15550001", aud: Any = ("service", AUDIENCE),
              ttl: int = 120, **extra: Any) -> str:
        now = int(time.time())
        claims = {"iss": "key_test", "sub": sub, "aud": list(aud) if not isinstance(aud, str)
                  else aud, "iat": now, "exp": now + ttl, **extra}
        return jwt.encode(claims, self.key, algorithm="ES256", headers={"kid": self.kid})




def spec_signature(secret: str, t: int, method: str, path: str, body: bytes) -> str:
    """From the spec only: base64(SHA-256(body)) or "" for an empty body; the signed string
    "<t>.<METHOD>.<path>.<digest>"; v1 = hex HMAC-SHA256 under the secret."""
    digest = base64.b64encode(hashlib.sha256(body).digest()).decode() if body else ""
    signed = f"{t}.{method}.{path}.{digest}"
    v1 = hmac.new(secret.encode("utf-8"), signed.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"t={t},v1={v1}"


def spec_verify(secret: str, header: str, method: str, path: str, body: bytes,
                tolerance: int = 300) -> bool:
    """The receiving side, from the spec only (steps 1-5)."""
    parts = dict(item.split("=", 1) for item in header.split(","))
    t = int(parts["t"])
    if abs(time.time() - t) > tolerance:
        return False
    expected = spec_signature(secret, t, method, path, body).split("v1=")[1]
    return hmac.compare_digest(parts["v1"], expected)


class ConnectionCounter:
    """A TCP listener that counts the connections it accepts and closes them at once, or,
    with ``read_first``, after reading the request (a host dropping the connection)."""

    def __init__(self, host: str = "127.0.0.1", read_first: bool = False):
        self.read_first = read_first
        self.received: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            if self.read_first:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(65536))
                except OSError:
                    pass
            conn.close()

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(timeout=2)
        self.sock.close()


def self_signed_cert(tmp_dir: Any, name: str) -> tuple[str, str, bytes]:
    """A certificate valid only for the DNS name ``name``: (certfile, keyfile, PEM)."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    certfile, keyfile = tmp_dir / "cert.pem", tmp_dir / "key.pem"
    certfile.write_bytes(pem)
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return str(certfile), str(keyfile), pem
