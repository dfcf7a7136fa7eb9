"""The caller-side mint endpoint example, served by uvicorn, end to end with the verifier."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from direct_testkit import KEY_ID, UvicornThread

from heddle.auth.jwk_keys import write_keypair
from heddle.auth.session_tokens import SessionTokenVerifier, TokenError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mint_endpoint" / "app.py"
SESSION_SECRET = b"example-session-secret-0123456789abcdef"
CONNECTION = str(uuid.UUID(int=42))


def _load_example():
    spec = importlib.util.spec_from_file_location("heddle_example_mint_endpoint", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


example = _load_example()


@pytest.fixture(scope="module")
def key_files(tmp_path_factory):
    return write_keypair(tmp_path_factory.mktemp("keys"), "ES256", "example-key-1")


@pytest.fixture(scope="module")
def mint_server(key_files):
    config = example.MintConfig.from_env({
        "MINT_PRIVATE_KEY_FILE": str(key_files.private_key),
        "MINT_PUBLIC_JWKS_FILE": str(key_files.jwks),
        "MINT_KID": key_files.kid,
        "HEDDLE_KEY_ID": KEY_ID,
        "HEDDLE_CONNECTION_ID": CONNECTION,
        "APP_SESSION_SECRET": SESSION_SECRET.decode(),
        "APP_COOKIE_SECURE": "0",  # plain http on loopback
    })
    server = UvicornThread(example.create_app(config))
    yield server
    server.close()


@contextlib.asynccontextmanager
async def _logged_in_client(mint_server, user_id="u_123") -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=mint_server.url()) as client:
        response = await client.post("/login", json={"user_id": user_id})
        assert response.status_code == 200
        yield client


async def test_mints_a_token_heddle_accepts_from_the_served_jwks(mint_server, lookup,
                                                                 jwks_cache):
    lookup.add(jwks_uri=mint_server.url("/.well-known/jwks.json"))
    async with _logged_in_client(mint_server) as client:
        response = await client.post("/api/heddle/session-token")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["status"] == "success"
    data = body["data"]
    assert data["expires_in"] == 120
    assert data["subject_ref"] == "web:u_123"

    claims = await SessionTokenVerifier(lookup, jwks_cache).verify(data["token"])
    assert claims.subject == "web:u_123"
    assert str(claims.conn) == CONNECTION
    assert claims.key_id == KEY_ID
    assert claims.alg == "ES256" and claims.kid == "example-key-1"
    assert claims.expires_at.timestamp() == pytest.approx(time.time() + 120, abs=5)


async def test_token_verifies_with_the_pasted_jwks(mint_server, key_files, verifier, lookup):
    lookup.add(jwks_json=json.loads(key_files.jwks.read_text()))
    async with _logged_in_client(mint_server, "alice") as client:
        token = (await client.post("/api/heddle/session-token")).json()["data"]["token"]
    assert (await verifier.verify(token)).subject == "web:alice"


async def test_another_workspace_key_cannot_verify_it(mint_server, keys, verifier, lookup):
    lookup.add(jwks_json={"keys": [{**keys["ES256"].jwk, "kid": "example-key-1"}]})
    async with _logged_in_client(mint_server) as client:
        token = (await client.post("/api/heddle/session-token")).json()["data"]["token"]
    with pytest.raises(TokenError, match="signature verification failed"):
        await verifier.verify(token)


@pytest.mark.parametrize("cookie", [
    None,
    "garbage",
    "u_123.9999999999.forged-mac",
    "u_1.%ZZ.!!",
    "admin." + "9" * 300,
])
async def test_no_token_without_a_valid_session(cookie, mint_server):
    cookies = {example.SESSION_COOKIE: cookie} if cookie else None
    async with httpx.AsyncClient(base_url=mint_server.url(), cookies=cookies) as client:
        response = await client.post("/api/heddle/session-token")
    assert response.status_code == 401
    assert response.json() == {"status": "error", "error": {
        "code": "unauthorized", "message": "Log in first."}}


async def test_session_cookie_for_another_user_cannot_be_forged(mint_server):
    real = example.issue_session_cookie("u_123", SESSION_SECRET)
    _user, expires, mac = real.split(".")
    forged = f"admin.{expires}.{mac}"
    async with httpx.AsyncClient(base_url=mint_server.url(),
                                 cookies={example.SESSION_COOKIE: forged}) as client:
        assert (await client.post("/api/heddle/session-token")).status_code == 401
        client.cookies.set(example.SESSION_COOKIE, real)
        assert (await client.post("/api/heddle/session-token")).status_code == 200


def test_expired_session_cookie_is_refused():
    cookie = example.issue_session_cookie("u_1", SESSION_SECRET, now=time.time() - 9 * 3600)
    assert example.read_session_cookie(cookie, SESSION_SECRET) is None
    fresh = example.issue_session_cookie("u_1", SESSION_SECRET)
    assert example.read_session_cookie(fresh, SESSION_SECRET) == "u_1"
    assert example.read_session_cookie(fresh, b"another-secret-0123456789abcdef!!") is None
    for hostile in ("é.é.é", "u_1.1e9.x", "a.b", "", "u_1.99999999999.".ljust(400, "x")):
        assert example.read_session_cookie(hostile, SESSION_SECRET) is None


@pytest.mark.parametrize("body", [{"user_id": "a b"}, {"user_id": ""}, {"user_id": 5}, {},
                                  ["u"], "not json"])
async def test_demo_login_validates_input(body, mint_server):
    async with httpx.AsyncClient(base_url=mint_server.url()) as client:
        if body == "not json":
            response = await client.post("/login", content=b"{", headers={
                "content-type": "application/json"})
        else:
            response = await client.post("/login", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"


async def test_mint_endpoint_is_post_only(mint_server):
    async with _logged_in_client(mint_server) as client:
        assert (await client.get("/api/heddle/session-token")).status_code == 405


def test_config_refuses_a_short_session_secret(key_files):
    with pytest.raises(ValueError, match="at least 32 bytes"):
        example.MintConfig.from_env({
            "MINT_PRIVATE_KEY_FILE": str(key_files.private_key), "MINT_KID": "k",
            "HEDDLE_KEY_ID": KEY_ID, "APP_SESSION_SECRET": "short"})
