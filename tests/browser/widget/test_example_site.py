"""The example site's own side, over HTTP: its login, its session cookie, and the mint endpoint
that turns that session (and nothing else) into a Heddle session token the browser can use
from this site's origin only."""

from __future__ import annotations

import httpx
import jwt
import pytest

# Each module starts Heddle and the example site (a subprocess that runs the heddle CLI).
pytestmark = pytest.mark.slow


@pytest.fixture
def http(site):
    with httpx.Client(base_url=site["SITE_URL"], timeout=10, follow_redirects=False) as client:
        yield client


def login(http, user="site", password="pw-site"):
    return http.post("/login", data={"username": user, "password": password})


def mint(http, **headers):
    return http.post("/api/heddle/session-token", headers={"X-Requested-With": "heddle-chat", **headers})


def test_pages_need_a_login_and_a_wrong_password_is_refused(http):
    assert http.get("/").status_code == 303 and http.get("/").headers["location"] == "/login"
    page = http.get("/login")
    assert page.status_code == 200 and 'name="password"' in page.text
    bad = login(http, password="wrong")
    assert bad.status_code == 401 and 'role="alert"' in bad.text and "Wrong username or password." in bad.text
    assert "webchat_session" not in bad.cookies
    unknown = login(http, user="nobody")
    assert unknown.status_code == 401 and "Wrong username or password." in unknown.text


def test_the_chosen_agent_is_kept_through_the_login(http):
    """`/?agent=agent_…` before logging in is still the agent after it (it used to be lost)."""
    agent = "agent_chosen0000000000000"
    first = http.get(f"/?agent={agent}")
    assert first.status_code == 303 and first.headers["location"] == f"/login?agent={agent}"
    form = http.get(first.headers["location"])
    assert f'<input type="hidden" name="agent" value="{agent}">' in form.text
    odd = http.get('/login?agent="><script>')  # anything but an agent id is dropped, never echoed
    assert odd.status_code == 200 and 'name="agent"' not in odd.text and "<script>" not in odd.text
    wrong = http.post("/login", data={"username": "site", "password": "wrong", "agent": agent})
    assert wrong.status_code == 401 and f'value="{agent}"' in wrong.text  # kept for the next try
    done = http.post("/login", data={"username": "site", "password": "pw-site", "agent": agent})
    assert done.status_code == 303 and done.headers["location"] == f"/?agent={agent}"
    assert f'data-agent="{agent}"' in http.get(done.headers["location"]).text
    assert http.post("/login", data={"username": "site", "password": "pw-site", "agent": "x"}).headers["location"] == "/"


def test_logged_in_page_embeds_the_widget_from_heddle(http, site):
    r = login(http)
    assert r.status_code == 303 and r.cookies.get("webchat_session")
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    page = http.get("/")
    heddle = site["HEDDLE_URL"]
    assert page.status_code == 200
    assert f'<script src="{heddle}/widget/heddle-chat.js"></script>' in page.text
    assert 'data-agent="agent_' in page.text
    csp = page.headers["content-security-policy"]
    assert f"script-src 'self' {heddle}" in csp and "ws://127.0.0.1:" in csp and "'unsafe-inline'" not in csp


def test_mint_endpoint_mints_for_the_logged_in_user_only(http, site):
    assert mint(http).status_code == 401 and mint(http).json()["error"]["code"] == "unauthorized"
    login(http)
    no_header = http.post("/api/heddle/session-token")
    assert no_header.status_code == 403 and no_header.json()["status"] == "error"
    r = mint(http)
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    data = r.json()["data"]
    assert data["expires_in"] == 120 and data["subject_ref"] == "web:site"
    claims = jwt.decode(data["token"], options={"verify_signature": False})
    assert claims["sub"] == "web:site" and claims["iss"].startswith("key_")
    assert claims["aud"] == ["service", "web-chat"] and claims["exp"] - claims["iat"] == 120
    # A forged or tampered session cookie mints nothing.
    http.cookies.set("webchat_session", http.cookies["webchat_session"][:-2] + "xx")
    assert mint(http).status_code == 401
    # Logging out ends it.
    login(http)
    http.post("/logout")
    assert mint(http).status_code == 401


def test_heddle_accepts_the_token_from_the_site_origin_only(http, site):
    login(http)
    token = mint(http).json()["data"]["token"]
    origin = f"http://127.0.0.1:{site['port']}"
    with httpx.Client(base_url=site["HEDDLE_URL"], timeout=10) as heddle:
        auth = {"Authorization": f"Bearer {token}"}
        ok = heddle.get("/v1/loom/realtime/config", headers={**auth, "Origin": origin})
        assert ok.status_code == 200 and ok.json()["data"]["enabled"] is True
        assert ok.headers["access-control-allow-origin"] == origin
        other = heddle.get("/v1/loom/realtime/config", headers={**auth, "Origin": "http://127.0.0.1:1"})
        assert other.status_code == 403 and other.json()["error"]["code"] == "origin_not_allowed"
        # The subject is the token's: a Service-Subject header beside it is refused.
        both = heddle.get("/v1/loom/threads", headers={**auth, "Origin": origin, "Service-Subject": "web:someone"})
        assert both.status_code == 400 and both.json()["error"]["code"] == "subject_header_with_token"
