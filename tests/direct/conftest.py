"""Fixtures for the direct-mode (session token) tests.

Signing keys are made once per session (RSA generation is the slow part); the JWKS server is
one real `http.server` per session whose documents, failure mode and request counts are reset
for every test.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from direct_testkit import (
    ALL_ALGORITHMS,
    FakeClock,
    JwksServer,
    Lookup,
    SigningKey,
    make_signing_key,
)

from heddle.auth.jwks import JwksCache
from heddle.auth.session_tokens import SessionTokenVerifier


@pytest.fixture(scope="session")
def keys() -> dict[str, SigningKey]:
    """One signing key per allowed algorithm, kid `<alg>-test`."""
    return {alg: make_signing_key(alg) for alg in ALL_ALGORITHMS}


@pytest.fixture(scope="session")
def _jwks_server_session() -> Iterator[JwksServer]:
    server = JwksServer()
    yield server
    server.close()


@pytest.fixture
def jwks_server(_jwks_server_session: JwksServer) -> JwksServer:
    _jwks_server_session.reset()
    return _jwks_server_session


@pytest.fixture
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(2.0)) as client:
        yield client


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def jwks_cache(http_client: httpx.AsyncClient, clock: FakeClock) -> JwksCache:
    return JwksCache(http_client, ttl=300, min_refresh_interval=30, stale_grace=600, clock=clock)


@pytest.fixture
def lookup() -> Lookup:
    return Lookup()


@pytest.fixture
def verifier(lookup: Lookup, jwks_cache: JwksCache) -> SessionTokenVerifier:
    return SessionTokenVerifier(lookup, jwks_cache)


@pytest.fixture
def all_keys_published(keys: dict[str, SigningKey], jwks_server: JwksServer,
                       lookup: Lookup) -> str:
    """Every test key served at the JWKS URI of the default API key; returns the URI."""
    uri = jwks_server.publish(*(k.jwk for k in keys.values()))
    lookup.add(jwks_uri=uri)
    return uri
