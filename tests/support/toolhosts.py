"""A caller's tool host on a loopback port, verified by the real `heddle.toolhost` middleware.

Subclasses list their `paths` and answer in `_handle`; this base holds the caller's signing key
(its JWKS goes into the workspace), the uvicorn server thread and the mint of session tokens.
"""

from __future__ import annotations

import threading

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from heddle.auth.jwk_keys import generate_keypair, mint_session_token
from heddle.toolhost import ReplayCache, ToolHostVerifier
from support.net import bound_socket, wait_started

AUDIENCE = "my-app"
KID = "caller-key"


class LoopbackToolHost:
    paths: tuple[str, ...] = ()

    def __init__(self, request_secret: str, key_id: str):
        self.request_secret = request_secret
        self.key_id = key_id  # the workspace API key id the caller's tokens name as `iss`
        self.private_pem, self.jwks = generate_keypair("ES256", KID)
        app = Starlette(routes=[Route(p, self._handle, methods=["POST"]) for p in (*self.paths, "/mint")])
        verified = ToolHostVerifier(app, request_secret=request_secret, audience=AUDIENCE, jwks=self.jwks,
                                    signature_only_paths={"/mint"}, replay_cache=ReplayCache())
        self.socket = bound_socket()
        self.port = self.socket.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(verified, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def mint_token(self, subject: str) -> str:
        return mint_session_token(self.private_pem, kid=KID, alg="ES256", key_id=self.key_id,
                                  subject=subject, audience=("service", AUDIENCE), ttl=120)

    async def _handle(self, request: Request) -> Response:
        raise NotImplementedError

    def start(self):
        self.thread.start()
        wait_started(self.server, self.thread)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
