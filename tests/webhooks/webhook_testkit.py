"""A real webhook receiver on a loopback port, and a signature check written from the spec."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def spec_verify(header: str | None, method: str, path: str, body: bytes, secret: str, now: float) -> bool:
    """Steps 1-5 of "Verifying calls the service makes", read from the spec's text."""
    if header is None:  # 1. reject when the header is missing
        return False
    parts = dict(item.split("=", 1) for item in header.split(","))
    t, v1 = int(parts["t"]), parts["v1"]
    if abs(now - t) > 300:  # 2. the timestamp tolerance
        return False
    digest = base64.b64encode(hashlib.sha256(body).digest()).decode() if body else ""  # 3.
    signed = f"{t}.{method}.{path}.{digest}"  # 4.
    expected = hmac.new(secret.encode(), signed.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(v1, expected)  # 5. constant time


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def event(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A real HTTP server; answers each POST with the next scripted status (then 200)."""

    statuses: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)

    port: int = 0  # 0: any free port

    def __post_init__(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.received.append(Received(self.path, dict(self.headers), body, time.time()))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"ok": true}' if status < 300 else b'{"message": "receiver says no"}')

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}/hooks/heddle?source=test"

    def wait_for(self, count: int, timeout: float = 15) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.received) >= count, f"got {len(self.received)} of {count} webhook POSTs"
        return self.received

    def close(self):
        self.httpd.shutdown()
