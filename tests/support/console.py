"""An operator's browser, as far as the console API can tell: the session cookie from the login
link's Set-Cookie, `Origin` on every change and the CSRF token from /me.

The cookie is `Secure`; Python's cookie jar never sends a Secure cookie over http (browsers do on
loopback: tests/browser/console_login proves it with Chromium), so this client keeps the cookie
itself, after checking every attribute the server set.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from heddle.operators import service as operators
from support.server import LiveServer

LINK = re.compile(r"/console/login/([A-Za-z0-9_-]+)$")


def new_operator(server: LiveServer, email: str) -> tuple[str, str]:
    """(operator id, login URL), made through the same service `heddle operator create` uses."""
    async def work():
        async with server.services.database().transaction() as s:
            op = await operators.create_operator(s, email)
            token = await operators.new_login_token(s, op, server.settings.console_link_ttl)
            return op.id, operators.login_url(server.base_url, token)

    return server.call(work())


def login_link(server: LiveServer, email: str) -> str:
    async def work():
        async with server.services.database().transaction() as s:
            op = await operators.by_email(s, email)
            return operators.login_url(server.base_url, await operators.new_login_token(
                s, op, server.settings.console_link_ttl))

    return server.call(work())


def cookie_attributes(set_cookie: str) -> tuple[str, str, dict[str, str]]:
    """name, value and the lower-cased attributes of one Set-Cookie header."""
    first, *attrs = [p.strip() for p in set_cookie.split(";")]
    name, _, value = first.partition("=")
    parsed = {}
    for a in attrs:
        k, _, v = a.partition("=")
        parsed[k.lower()] = v
    return name, value, parsed


class Console:
    """Signs in through the login link (GET page, POST button) and calls /console/api."""

    def __init__(self, server: LiveServer):
        self.server = server
        self.http = httpx.Client(base_url=server.base_url, timeout=15, follow_redirects=False)
        self.cookie: str | None = None
        self.csrf: str | None = None
        self.origin = server.base_url

    def sign_in(self, url: str) -> httpx.Response:
        path = url.removeprefix(self.server.base_url)
        page = self.http.get(path)
        assert page.status_code == 200 and 'id="sign-in"' in page.text, page.text
        resp = self.http.post(path, headers={"Origin": self.origin})
        assert resp.status_code == 303 and resp.headers["location"] == "/console", resp.text
        name, value, attrs = cookie_attributes(resp.headers["set-cookie"])
        assert name == "heddle_console" and len(value) >= 40
        assert attrs["path"] == "/console" and attrs["samesite"].lower() == "strict"
        assert "httponly" in attrs and "secure" in attrs
        self.cookie = value
        me = self.get("/me")
        assert me.status_code == 200, me.text
        self.csrf = me.json()["data"]["csrf_token"]
        return resp

    def headers(self, method: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        h: dict[str, str] = {}
        if self.cookie:
            h["Cookie"] = f"heddle_console={self.cookie}"
        if method not in ("GET", "HEAD"):
            h["Origin"] = self.origin
            if self.csrf:
                h["X-CSRF-Token"] = self.csrf
        h.update(extra or {})
        return h

    def request(self, method: str, path: str, *, headers: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
        return self.http.request(method, "/console/api" + path, headers=self.headers(method, headers), **kw)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PUT", path, **kw)

    def patch(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PATCH", path, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("DELETE", path, **kw)

    def data(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        resp = self.request(method, path, **kw)
        assert resp.status_code == status, resp.text
        body = resp.json()
        assert body["status"] == "success"
        return body["data"]

    def close(self) -> None:
        self.http.close()


def expect_error(resp, status: int, code: str):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["status"] == "error" and body["error"]["code"] == code, body
    return body["error"]
