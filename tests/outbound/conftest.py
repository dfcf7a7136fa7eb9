"""Real servers on loopback addresses for the outbound tests.

`ServerThread` runs any ASGI app under uvicorn in a background thread. The recording tool
host is a Starlette app behind `heddle.toolhost.ToolHostVerifier`; each test scripts what
a path answers with `host.script(path, [responses...])`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from heddle.outbound import build_outbound_client
from heddle.toolhost import ReplayCache, ToolHostVerifier

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))  # outbound_testkit
if str(REPO_ROOT) not in sys.path:  # the example tool host lives in examples/, not src/
    sys.path.insert(0, str(REPO_ROOT))

from outbound_testkit import (
    AUDIENCE,
    REQUEST_SECRET,
    ServerThread,
    Signer,
    only_127_0_0_2,
)


@pytest.fixture(scope="session")
def signer() -> Signer:
    key = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": "k1", "alg": "ES256", "use": "sig"})
    return Signer(key, "k1", {"keys": [jwk]})


# --- the recording tool host ---------------------------------------------------------------

@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes
    claims: dict[str, Any]


@dataclass
class ToolHost:
    url: str
    requests: list[Recorded] = field(default_factory=list)
    scripts: dict[str, list[Callable[[], Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    replay_cache: ReplayCache = field(default_factory=ReplayCache)

    def script(self, path: str, *answers: Any) -> None:
        """Answers for the next requests to ``path``: a Response, a dict (200 JSON) or a
        number of seconds to sleep before answering 200."""
        with self.lock:
            self.scripts[path] = list(answers)

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.scripts.clear()
        self.replay_cache.clear()

    def to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]


def _tool_host_app(host: ToolHost, signer: Signer) -> Any:
    async def endpoint(request: Request) -> Response:
        body = await request.body()
        with host.lock:
            host.requests.append(Recorded(request.url.path, dict(request.headers), body,
                                          request.state.toolhost_claims))
            queue = host.scripts.get(request.url.path) or []
            answer = queue.pop(0) if queue else {"echo": json.loads(body or b"null")}
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            await asyncio.sleep(answer)
            answer = {"slept": answer}
        if isinstance(answer, dict):
            return JSONResponse(answer)
        return answer

    inner = Starlette(routes=[Route("/{path:path}", endpoint, methods=["POST"])])
    return ToolHostVerifier(inner, request_secret=REQUEST_SECRET, audience=AUDIENCE,
                            jwks=signer.jwks, replay_cache=host.replay_cache,
                            max_body_bytes=64 * 1024)


@pytest.fixture(scope="session")
def tool_host_server(signer):
    host = ToolHost(url="")
    with ServerThread(_tool_host_app(host, signer), host="127.0.0.2") as server:
        host.url = server.url
        yield host


@pytest.fixture
def tool_host(tool_host_server) -> ToolHost:
    tool_host_server.reset()
    return tool_host_server


@pytest.fixture
async def client():
    """An outbound client whose policy allows exactly 127.0.0.2 (the test servers)."""
    async with build_outbound_client(allow_private=True, connect_timeout=2, timeout=3,
                                     max_response_bytes=64 * 1024,
                                     address_policy=only_127_0_0_2) as c:
        yield c


@pytest.fixture
async def public_client():
    """The production policy: public addresses only, https only."""
    async with build_outbound_client(allow_private=False, connect_timeout=2, timeout=3,
                                     max_response_bytes=64 * 1024) as c:
        yield c
