"""Operators sign in with a one-time link; the session cookie then authorises /console/api."""

from __future__ import annotations

import datetime as dt

import httpx
from sqlalchemy import update

from heddle.operators import service as operators
from heddle.operators.models import OperatorLoginToken
from support.console import Console, expect_error, login_link, new_operator


def _path(server, url: str) -> str:
    return url.removeprefix(server.base_url)


def test_link_signs_in_once_and_the_session_reaches_me(server):
    op_id, url = new_operator(server, "Alice@Example.com")
    assert url.startswith(server.base_url + "/console/login/")
    console = Console(server)
    try:
        console.sign_in(url)
        me = console.data("GET", "/me")
        assert me["id"] == op_id and me["email"] == "Alice@Example.com" and len(me["csrf_token"]) >= 40
        # Used once: the page and the button both answer the 410 page now.
        again = console.http.get(_path(server, url))
        assert again.status_code == 410 and "login_link_invalid" in again.text
        assert again.headers["content-type"].startswith("text/html")
        assert console.http.post(_path(server, url), headers={"Origin": server.base_url}).status_code == 410
    finally:
        console.close()


def test_get_does_not_spend_the_link(server):
    _, url = new_operator(server, "scanner-safe@example.com")
    console = Console(server)
    try:
        for _ in range(3):  # a mail scanner prefetching the link
            page = console.http.get(_path(server, url))
            assert page.status_code == 200 and "Sign in" in page.text
            assert page.headers["referrer-policy"] == "same-origin"  # the token never leaves this origin
        console.sign_in(url)
    finally:
        console.close()


def test_unknown_malformed_and_expired_links_are_refused(server, http):
    for path in ("/console/login/" + "x" * 43, "/console/login/short", "/console/login/" + "a" * 300):
        resp = http.get(path)
        assert resp.status_code == 410 and "login_link_invalid" in resp.text
        assert http.post(path, headers={"Origin": server.base_url}).status_code == 410
    _, url = new_operator(server, "late@example.com")
    token_hash = operators.digest(url.rsplit("/", 1)[1])

    async def expire():
        async with server.services.database().transaction() as s:
            await s.execute(update(OperatorLoginToken).where(OperatorLoginToken.token_hash == token_hash)
                            .values(expires_at=operators.utcnow() - dt.timedelta(seconds=1)))

    server.call(expire())
    assert http.get(_path(server, url)).status_code == 410
    assert http.post(_path(server, url), headers={"Origin": server.base_url}).status_code == 410


def test_login_from_another_site_is_refused_and_keeps_the_link(server, http):
    _, url = new_operator(server, "csrf-login@example.com")
    resp = http.post(_path(server, url), headers={"Origin": "https://evil.example"})
    assert resp.status_code == 403 and "csrf_failed" in resp.text and "set-cookie" not in resp.headers
    console = Console(server)
    try:
        console.sign_in(url)  # still usable
    finally:
        console.close()


def test_disabled_operator_loses_its_session_and_its_links(server):
    _, url = new_operator(server, "leaver@example.com")
    console = Console(server)
    try:
        console.sign_in(url)
        spare = login_link(server, "leaver@example.com")

        async def disable():
            async with server.services.database().transaction() as s:
                return await operators.disable(s, await operators.by_email(s, "LEAVER@example.com"))

        assert server.call(disable()) == 1
        expect_error(console.get("/me"), 401, "console_unauthenticated")
        assert console.http.get(_path(server, spare)).status_code == 410
        assert console.http.post(_path(server, spare), headers={"Origin": server.base_url}).status_code == 410
    finally:
        console.close()


def test_logout_ends_the_session_and_clears_the_cookie(console):
    resp = console.post("/logout")
    assert resp.status_code == 200 and resp.json()["data"] == {"logged_out": True}
    assert 'heddle_console=""' in resp.headers["set-cookie"] or "Max-Age=0" in resp.headers["set-cookie"]
    expect_error(console.get("/me"), 401, "console_unauthenticated")


def test_no_session_a_bad_cookie_or_a_workspace_key_is_401(server, http, tenant):
    expect_error(http.get("/console/api/me"), 401, "console_unauthenticated")
    expect_error(http.get("/console/api/workspaces"), 401, "console_unauthenticated")
    expect_error(http.get("/console/api/workspaces", headers={"Cookie": "heddle_console=forged"}),
                 401, "console_unauthenticated")
    err = expect_error(http.get("/console/api/workspaces", headers={"Authorization": f"Bearer {tenant.secret}"}),
                       401, "console_unauthenticated")
    assert "never accepted" in err["message"]
    jwt_like = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3ZWI6YSJ9.c2ln"  # a session token never works here either
    expect_error(http.get("/console/api/me", headers={"Authorization": f"Bearer {jwt_like}"}),
                 401, "console_unauthenticated")
    expect_error(http.post("/console/api/workspaces", json={"name": "x"},
                           headers={"Authorization": f"Bearer {tenant.secret}"}), 401, "console_unauthenticated")


def test_csrf_missing_wrong_or_foreign_origin_is_403(console):
    expect_error(console.post("/workspaces", json={"name": "a"}, headers={"X-CSRF-Token": ""}), 403, "csrf_failed")
    expect_error(console.post("/workspaces", json={"name": "a"}, headers={"X-CSRF-Token": "nope"}), 403,
                 "csrf_failed")
    expect_error(console.post("/workspaces", json={"name": "a"}, headers={"Origin": "https://evil.example"}), 403,
                 "csrf_failed")
    expect_error(console.post("/workspaces", json={"name": "a"}, headers={"Sec-Fetch-Site": "cross-site"}), 403,
                 "csrf_failed")
    expect_error(console.post("/workspaces", json={"name": "a"}, headers={"Sec-Fetch-Site": "same-site"}), 403,
                 "csrf_failed")  # another port on this host
    expect_error(console.post("/workspaces", json={"name": "a"}, headers={"Origin": "null"}), 403, "csrf_failed")
    expect_error(console.patch("/workspaces/ws_x", json={}, headers={"X-CSRF-Token": "nope"}), 403, "csrf_failed")
    expect_error(console.delete("/workspaces/ws_x/keys/key_x", headers={"X-CSRF-Token": "nope"}), 403, "csrf_failed")
    expect_error(console.put("/workspaces/ws_x/agents/agent_x", json={}, headers={"X-CSRF-Token": "nope"}), 403,
                 "csrf_failed")
    expect_error(console.post("/logout", headers={"X-CSRF-Token": "nope"}), 403, "csrf_failed")
    # A console page sends `Origin: null` (its Referrer-Policy is no-referrer) with Sec-Fetch-Site.
    assert console.data("POST", "/workspaces", 201, json={"name": "b"},
                        headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"})["name"] == "b"
    # Nothing was created by the refused calls; the real token works.
    assert all(w["name"] != "a" for w in console.data("GET", "/workspaces")["items"])
    assert console.data("POST", "/workspaces", 201, json={"name": "a"})["name"] == "a"


def test_console_routes_are_not_in_openapi(http):
    paths = http.get("/openapi.json").json()["paths"]
    assert not [p for p in paths if p.startswith("/console")]


def test_two_presses_at_once_sign_in_once(server):
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    _, url = new_operator(server, "double-click@example.com")
    path = _path(server, url)

    def press(_):
        with httpx.Client(base_url=server.base_url, timeout=15) as c:
            return c.post(path, headers={"Origin": server.base_url}).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(press, range(8)))
    assert statuses == [303] + [410] * 7


def test_expired_links_and_sessions_are_forgotten(server):
    from sqlalchemy import func, select

    from heddle.operators.models import OperatorSession

    _, url = new_operator(server, "tidy@example.com")
    console = Console(server)
    try:
        console.sign_in(url)

        async def expire_all():
            async with server.services.database().transaction() as s:
                past = operators.utcnow() - dt.timedelta(seconds=1)
                await s.execute(update(OperatorSession).values(expires_at=past))
                await s.execute(update(OperatorLoginToken).values(expires_at=past))

        server.call(expire_all())
        expect_error(console.get("/me"), 401, "console_unauthenticated")  # an expired session
        login_link(server, "tidy@example.com")  # making a link prunes what expired

        async def counts():
            async with server.services.database().session() as s:
                return (await s.scalar(select(func.count()).select_from(OperatorSession)),
                        await s.scalar(select(func.count()).select_from(OperatorLoginToken)))

        assert server.call(counts()) == (0, 1)
    finally:
        console.close()


def test_a_forged_host_does_not_make_a_foreign_origin_ours(server, console):
    """The origin check compares with HEDDLE_PUBLIC_URL (here the server's own address), never
    with the request's Host header, which the client writes."""
    forged = {"Host": "evil.test", "Origin": "http://evil.test"}
    expect_error(console.post("/workspaces", json={"name": "forged"}, headers=forged), 403, "csrf_failed")
    assert all(w["name"] != "forged" for w in console.data("GET", "/workspaces")["items"])
    _, url = new_operator(server, "forged-host@example.com")
    with httpx.Client(base_url=server.base_url, follow_redirects=False) as http:
        refused = http.post(_path(server, url), headers=forged)
        assert refused.status_code == 403
        # the link was not spent by the refused attempt
        assert http.post(_path(server, url), headers={"Origin": server.base_url}).status_code == 303
    # the other loopback name of the same port is the same server
    port = server.base_url.rsplit(":", 1)[1]
    assert console.data("POST", "/workspaces", 201, json={"name": "via-localhost"},
                        headers={"Origin": f"http://localhost:{port}"})["name"] == "via-localhost"


def test_the_login_page_wears_the_built_consoles_stylesheet(server, http, tmp_path, monkeypatch):
    """Built: the page links the console's hashed stylesheet (CSP style-src 'self', nothing
    inline); not built: a small inline style (CSP allows only that)."""
    from heddle.web import routes as web

    built = tmp_path / "console"
    built.mkdir()
    (built / "index.html").write_text('<link rel="stylesheet" crossorigin href="/console/assets/index-Ab1_c.css">')
    _, url = new_operator(server, "looks@example.com")
    monkeypatch.setattr(web, "CONSOLE", built)
    page = http.get(_path(server, url))
    assert page.status_code == 200 and 'href="/console/assets/index-Ab1_c.css"' in page.text
    assert "<style>" not in page.text and 'class="signin card"' in page.text
    assert "style-src 'self';" in page.headers["content-security-policy"]
    monkeypatch.setattr(web, "CONSOLE", tmp_path / "not-built")
    page = http.get(_path(server, url))
    assert page.status_code == 200 and "<style>" in page.text and "/console/assets/" not in page.text
    assert "style-src 'unsafe-inline';" in page.headers["content-security-policy"]
