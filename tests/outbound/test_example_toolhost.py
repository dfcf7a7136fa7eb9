"""The example tool host end to end: Heddle's mint client gets a subject token from the
example's /mint, then Heddle's tool-call client uses it on the example's payment tools."""

from __future__ import annotations

import stat
import uuid

import httpx
import jwt
import pytest
from examples.toolhost import app as example_app
from examples.toolhost.__main__ import main as example_main
from examples.toolhost.config import ConfigError, ToolHostConfig
from outbound_testkit import REPO_ROOT, ServerThread

from heddle.outbound import call_hosted_tool, mint_subject_token
from heddle.toolhost import ToolHostVerifier

SECRET = "whsec_example_secret"
AUDIENCE = "acme-payments"
SUBJECT = "whatsapp:+15550009"


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("toolhost-keys")
    assert example_main(["keygen", "--out", str(out), "--kid", "demo-1"]) == 0
    return out


def env_for(keys_dir, **extra):
    return {"TOOLHOST_REQUEST_SECRET": SECRET, "TOOLHOST_AUDIENCE": AUDIENCE,
            "TOOLHOST_JWKS_FILE": str(keys_dir / "jwks.json"),
            "TOOLHOST_SIGNING_KEY_FILE": str(keys_dir / "private.pem"),
            "TOOLHOST_MINT_ISSUER": "key_demo"} | extra


@pytest.fixture(scope="module")
def example(keys_dir):
    config = ToolHostConfig.from_env(env_for(keys_dir))
    with ServerThread(example_app.create_app(config), host="127.0.0.2") as server:
        yield server


async def mint(client, example, subject=SUBJECT, secret=SECRET):
    return await mint_subject_token(client, mint_url=f"{example.url}/mint", request_secret=secret,
                                    subject=subject)


async def tool(client, example, name, token, subject=SUBJECT, key=None, **args):
    call_id = str(uuid.uuid4())
    payload = {"tool": name, "tool_call_id": call_id, "run_id": str(uuid.uuid4()),
               "thread_id": str(uuid.uuid4()), "subject": subject, "args": args}
    return await call_hosted_tool(
        client, base_url=example.url, path=f"/tools/{name}", request_secret=SECRET,
        bearer_token=token, payload=payload,
        reliability="at_most_once" if name == "send_transfer" else "idempotent",
        idempotency_key=key or call_id)


def test_keygen_writes_a_private_key_only_the_owner_reads(keys_dir):
    mode = stat.S_IMODE((keys_dir / "private.pem").stat().st_mode)
    assert mode == 0o600
    assert (keys_dir / "kid").read_text().strip() == "demo-1"


async def test_the_relay_flow(client, example, keys_dir):
    minted = await mint(client, example)
    claims = jwt.decode(minted.token, jwt.PyJWKSet.from_json((keys_dir / "jwks.json").read_text())
                        ["demo-1"].key, algorithms=["ES256"], audience="service")
    assert claims["sub"] == SUBJECT and claims["iss"] == "key_demo"
    assert claims["aud"] == ["service", AUDIENCE] and minted.expires_in == 300

    balance = await tool(client, example, "get_balance", minted.token)
    assert balance.status == "succeeded"
    assert balance.result == {"available": "1000.00", "currency": "USD", "pending_transfers": 0}

    key = str(uuid.uuid4())
    sent = await tool(client, example, "send_transfer", minted.token, key=key, amount=10.5,
                      to="Ada")
    assert sent.status == "succeeded" and sent.patch_ref.startswith("tr_")
    assert sent.result["status"] == "pending"
    again = await tool(client, example, "send_transfer", minted.token, key=key, amount=10.5)
    assert again.patch_ref == sent.patch_ref  # a repeated Idempotency-Key does not pay twice

    after = await tool(client, example, "get_balance", minted.token)
    assert after.result["available"] == "989.50" and after.result["pending_transfers"] == 1


@pytest.mark.parametrize(("args", "status", "code"), [
    ({"amount": 5000}, 422, "insufficient_funds"), ({"amount": -1}, 400, "invalid_amount"),
    ({"amount": 1.234}, 400, "invalid_amount"), ({"amount": "ten"}, 400, "invalid_amount"),
    ({"amount": True}, 400, "invalid_amount"), ({}, 400, "invalid_amount"),
    ({"amount": 1, "to": 7}, 400, "invalid_beneficiary"),
])
async def test_transfer_input_is_checked(client, example, args, status, code):
    token = (await mint(client, example, subject="sms:+1999")).token
    result = await tool(client, example, "send_transfer", token, subject="sms:+1999", **args)
    assert result.status == "failed" and result.http_status == status
    assert result.result["error"]["code"] == code


async def test_a_token_for_another_subject_cannot_move_money(client, example):
    token = (await mint(client, example, subject="sms:+1000")).token
    result = await tool(client, example, "send_transfer", token, subject=SUBJECT, amount=1)
    assert result.status == "failed" and result.http_status == 403
    assert result.result["error"]["code"] == "subject_mismatch"


async def test_requests_not_signed_by_the_workspace_are_refused(client, example):
    with pytest.raises(Exception, match="mint_failed"):
        await mint(client, example, secret="some other secret")
    async with httpx.AsyncClient(base_url=example.url) as http:
        assert (await http.post("/tools/get_balance", json={})).status_code == 401
        assert (await http.get("/healthz")).json() == {"ok": True}


@pytest.mark.parametrize(("change", "message"), [
    ({"TOOLHOST_REQUEST_SECRET": ""}, "REQUEST_SECRET"),
    ({"TOOLHOST_AUDIENCE": ""}, "AUDIENCE"),
    ({"TOOLHOST_JWKS_URL": "https://keys.example.com/jwks.json"}, "exactly one"),
    ({"TOOLHOST_JWKS_FILE": "/nonexistent/jwks.json"}, "cannot be read"),
    ({"TOOLHOST_MINT_TTL": "7200"}, "MINT_TTL"),
    ({"TOOLHOST_MINT_TTL": "abc"}, "MINT_TTL"),
])
def test_configuration_errors(keys_dir, change, message):
    with pytest.raises(ConfigError, match=message):
        ToolHostConfig.from_env(env_for(keys_dir, **change))


def test_uvicorn_can_load_the_module_level_app(keys_dir, monkeypatch):
    for name, value in env_for(keys_dir).items():
        monkeypatch.setenv(name, value)
    assert isinstance(example_app.app, ToolHostVerifier)
    monkeypatch.delenv("TOOLHOST_REQUEST_SECRET")
    assert example_main(["serve"]) == 2  # a clear configuration error, not a traceback


@pytest.mark.slow
def test_the_example_runs_as_a_command(tmp_path):
    """`python -m examples.toolhost serve --keys DIR` in its own process."""
    import os
    import subprocess
    import sys
    import time

    from outbound_testkit import free_port

    port = free_port()
    env = {**os.environ, "TOOLHOST_REQUEST_SECRET": SECRET, "TOOLHOST_AUDIENCE": AUDIENCE,
           "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "examples.toolhost", "serve", "--keys", str(tmp_path / "keys"),
         "--port", str(port)], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise AssertionError(process.stdout.read().decode()) from None
                time.sleep(0.1)
        assert response.json() == {"ok": True}
        assert (tmp_path / "keys" / "jwks.json").exists()
        unsigned = httpx.post(f"http://127.0.0.1:{port}/tools/get_balance", json={}, timeout=2)
        assert unsigned.status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=10)
