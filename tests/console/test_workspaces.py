"""/console/api/workspaces…: create, list, show, settings, keys and connections, and bad input."""

from __future__ import annotations

import pytest

from support.console import Console, expect_error, new_operator
from support.server import LiveServer

# The server refuses private outbound URLs unless told (as in production), so `dev` matters.
SERVER_SETTINGS = {"outbound_allow_private": False}


@pytest.fixture
def ws(console):
    return console.data("POST", "/workspaces", 201, json={"name": "Acme", "credits": 5})


def test_create_list_and_show(console, ws):
    assert ws["id"].startswith("ws_") and ws["name"] == "Acme" and ws["balance_credits"] == 5
    items = console.data("GET", "/workspaces")["items"]
    assert items[0]["id"] == ws["id"]  # newest first
    assert set(items[0]) == {"id", "name", "balance_credits", "created_at"}
    shown = console.data("GET", f"/workspaces/{ws['id']}")
    assert shown["request_secret"].count("…") == 1  # masked
    assert shown["keys"] == [] and shown["connections"] == [] and shown["agents"] == []
    assert shown["realtime"] is True and shown["rate_limit_per_key"] == "default"
    # The limit in force, not only the word "default": the server's own rule.
    assert shown["rate_limits"] == {"per_key": {"value": "off", "is_default": True},
                                    "per_subject": {"value": "off", "is_default": True}}


def test_default_rate_limits_show_the_servers_rule(tmp_path):
    """A server with its own rules: a workspace on the defaults is shown those rules."""
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path}/limits.db", rate_limit_per_key="7/second",
                        rate_limit_per_subject="2/second").start()
    console = Console(server)
    try:
        console.sign_in(new_operator(server, "limits@example.com")[1])
        ws = console.data("POST", "/workspaces", 201, json={"name": "Defaults"})["id"]
        shown = console.data("GET", f"/workspaces/{ws}")
        assert shown["rate_limits"] == {"per_key": {"value": "7/second", "is_default": True},
                                        "per_subject": {"value": "2/second", "is_default": True}}
        changed = console.data("PATCH", f"/workspaces/{ws}", json={"rate_limit_per_subject": "1/minute"})
        assert changed["rate_limits"]["per_subject"] == {"value": "1/minute", "is_default": False}
        assert changed["rate_limits"]["per_key"] == {"value": "7/second", "is_default": True}
    finally:
        console.close()
        server.stop()


def test_create_refuses_bad_bodies(console):
    err = expect_error(console.post("/workspaces", json={"name": ""}), 400, "invalid_request")
    assert err["details"][0]["field"] == "name"
    err = expect_error(console.post("/workspaces", json={"name": "x", "credits": -1}), 400, "invalid_request")
    assert err["details"][0]["field"] == "credits"
    err = expect_error(console.post("/workspaces", json={"name": "x", "owner": "me"}), 400, "invalid_request")
    assert err["details"][0]["field"] == "owner"
    expect_error(console.post("/workspaces", content=b"{not json", headers={"Content-Type": "application/json"}),
                 400, "invalid_request")
    expect_error(console.post("/workspaces", content=b"name=x",
                              headers={"Content-Type": "application/x-www-form-urlencoded"}),
                 415, "unsupported_media_type")
    big = {"name": "x" * (2 * 1024 * 1024)}
    expect_error(console.post("/workspaces", json=big), 413, "payload_too_large")


def test_unknown_workspace_is_404_everywhere(console):
    for path in ("/workspaces/ws_nope", "/workspaces/ws_nope/keys", "/workspaces/ws_nope/connections",
                 "/workspaces/ws_nope/agents", "/workspaces/ws_nope/credits", "/workspaces/ws_nope/runs",
                 "/workspaces/ws_nope/requests"):
        expect_error(console.get(path), 404, "not_found")
    expect_error(console.patch("/workspaces/ws_nope", json={"realtime": False}), 404, "not_found")
    expect_error(console.post("/workspaces/ws_nope/keys", json={}), 404, "not_found")
    expect_error(console.get("/no-such-route"), 404, "not_found")


def test_settings_patch(console, ws):
    path = f"/workspaces/{ws['id']}"
    jwks = {"keys": [{"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                      "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0", "kid": "k1"}]}
    data = console.data("PATCH", path, json={
        "jwks_uri": "https://auth.example.com/jwks.json", "jwks": jwks,
        "allowed_origins": ["https://App.example.com", "https://shop.example.com:8443"],
        "mint_url": "https://auth.example.com/mint", "realtime": False, "rate_limit_per_key": "5/second",
        "rate_limit_per_subject": "off", "retention_days": 30, "webhook_url": "https://hooks.example.com/heddle"})
    assert data["jwks_uri"] == "https://auth.example.com/jwks.json" and data["jwks"] == jwks
    assert data["allowed_origins"] == ["https://app.example.com", "https://shop.example.com:8443"]
    assert data["realtime"] is False and data["rate_limit_per_key"] == "5/second"
    assert data["rate_limit_per_subject"] == "off" and data["retention_days"] == 30
    assert data["rate_limits"] == {"per_key": {"value": "5/second", "is_default": False},
                                   "per_subject": {"value": "off", "is_default": False}}
    assert data["webhook_url"] == "https://hooks.example.com/heddle"
    assert "…" in data["request_secret"] and "…" in data["webhook_secret"]  # not rotated: masked
    rotated = console.data("PATCH", path, json={"rotate_request_secret": True, "rotate_webhook_secret": True})
    assert rotated["request_secret"].startswith("rs_") and "…" not in rotated["request_secret"]
    assert rotated["webhook_secret"].startswith("whsec_") and "…" not in rotated["webhook_secret"]
    assert "…" in console.data("GET", path)["request_secret"]  # shown once
    cleared = console.data("PATCH", path, json={"mint_url": None, "jwks": None, "retention_days": None,
                                                 "webhook_url": None, "rate_limit_per_key": "default"})
    assert cleared["mint_url"] is None and cleared["jwks"] is None and cleared["retention_days"] is None
    assert cleared["webhook_url"] is None and cleared["rate_limit_per_key"] == "default"
    assert cleared["jwks_uri"] == "https://auth.example.com/jwks.json"  # untouched


@pytest.mark.parametrize("body,field", [
    ({"allowed_origins": ["https://*.example.com"]}, "allowed origin"),
    ({"rate_limit_per_key": "lots"}, "lots"),
    ({"retention_days": -1}, "retention_days"),
    ({"jwks": {"keys": []}}, "jwks"),
    ({"jwks": {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}}, "jwks"),
    ({"mint_url": "http://127.0.0.1:9/mint"}, "mint_url"),
    ({"jwks_uri": "https://10.0.0.1/jwks"}, "jwks_uri"),
    ({"webhook_url": "https://user:pw@hooks.example.com"}, "webhook_url"),
    ({"realtime": "sometimes"}, "realtime"),
    ({"rotate_webhook_secret": True}, "webhook"),
    ({"colour": "red"}, "colour"),
])
def test_settings_patch_refuses_bad_values(console, ws, body, field):
    err = expect_error(console.patch(f"/workspaces/{ws['id']}", json=body), 400, "invalid_request")
    assert field in str(err), err
    assert err["details"], err


def test_private_urls_need_dev(console, ws):
    err = expect_error(console.patch(f"/workspaces/{ws['id']}", json={"mint_url": "http://127.0.0.1:9/mint"}),
                       400, "invalid_request")
    assert '"dev": true' in err["message"] and err["details"][0]["type"] == "invalid_url"
    data = console.data("PATCH", f"/workspaces/{ws['id']}", json={"mint_url": "http://127.0.0.1:9/mint", "dev": True})
    assert data["mint_url"] == "http://127.0.0.1:9/mint"


def test_keys_create_list_revoke(console, ws, server):
    path = f"/workspaces/{ws['id']}/keys"
    created = console.data("POST", path, 201, json={"mode": "test"})
    assert created["id"].startswith("key_") and created["secret"].startswith("sk_test_")
    listed = console.data("GET", path)["items"]
    assert [k["id"] for k in listed] == [created["id"]] and "secret" not in listed[0]
    assert listed[0]["mode"] == "test" and listed[0]["revoked_at"] is None
    with server.client() as http:  # the secret works on /v1 and is refused after revocation
        ok = http.post("/v1/identify", json={"identifier": "DEUTDEFF"},
                       headers={"Authorization": f"Bearer {created['secret']}"})
        assert ok.status_code == 200, ok.text
        assert console.data("DELETE", f"{path}/{created['id']}") == {"id": created["id"], "revoked": True}
        refused = http.post("/v1/identify", json={"identifier": "DEUTDEFF"},
                            headers={"Authorization": f"Bearer {created['secret']}"})
        assert refused.status_code == 401
    assert console.data("GET", path)["items"][0]["revoked_at"] is not None
    err = expect_error(console.post(path, json={"mode": "prod"}), 400, "invalid_request")
    assert err["details"][0]["field"] == "mode"
    expect_error(console.delete(f"{path}/key_unknown"), 404, "not_found")


def test_a_key_of_another_workspace_is_404(console, ws):
    other = console.data("POST", "/workspaces", 201, json={"name": "Other"})
    key = console.data("POST", f"/workspaces/{other['id']}/keys", 201, json={})
    expect_error(console.delete(f"/workspaces/{ws['id']}/keys/{key['id']}"), 404, "not_found")
    assert console.data("GET", f"/workspaces/{other['id']}/keys")["items"][0]["revoked_at"] is None


def test_connections(console, ws):
    path = f"/workspaces/{ws['id']}/connections"
    conn = console.data("POST", path, 201, json={"name": "payments", "base_url": "https://tools.example.com/"})
    assert conn["name"] == "payments" and conn["base_url"] == "https://tools.example.com"
    assert console.data("GET", path)["items"][0]["id"] == conn["id"]
    err = expect_error(console.post(path, json={"name": "payments", "base_url": "https://x.example.com"}),
                       400, "invalid_request")
    assert err["details"][0]["field"] == "name"  # duplicate
    err = expect_error(console.post(path, json={"name": "bad name!", "base_url": "https://x.example.com"}),
                       400, "invalid_request")
    assert err["details"][0]["field"] == "name"
    err = expect_error(console.post(path, json={"name": "local", "base_url": "http://192.168.1.5:9000"}),
                       400, "invalid_request")
    assert err["details"][0]["field"] == "base_url"
    local = console.data("POST", path, 201, json={"name": "local", "base_url": "http://192.168.1.5:9000",
                                                   "dev": True})
    assert local["base_url"] == "http://192.168.1.5:9000"
    err = expect_error(console.post(path, json={"name": "x"}), 400, "invalid_request")
    assert err["details"][0]["field"] == "base_url"


def test_connection_kinds(console, ws):
    path = f"/workspaces/{ws['id']}/connections"
    plain = console.data("POST", path, 201, json={"name": "signed", "base_url": "https://tools.example.com"})
    assert plain["kind"] == "http"  # the default: Heddle's signed-HTTP tools
    mcp = console.data("POST", path, 201, json={"name": "billing", "kind": "mcp",
                                                 "base_url": "https://billing.example.com/mcp"})
    assert mcp["kind"] == "mcp" and mcp["base_url"] == "https://billing.example.com/mcp"
    assert {c["name"]: c["kind"] for c in console.data("GET", path)["items"]} == {"billing": "mcp", "signed": "http"}
    err = expect_error(console.post(path, json={"name": "x", "kind": "grpc", "base_url": "https://x.example.com"}),
                       400, "invalid_request")
    assert err["details"][0]["field"] == "kind"
    # An MCP server's URL passes the same outbound checks as a tool host's.
    err = expect_error(console.post(path, json={"name": "y", "kind": "mcp", "base_url": "http://10.0.0.5/mcp"}),
                       400, "invalid_request")
    assert err["details"][0]["field"] == "base_url"
