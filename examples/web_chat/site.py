"""The caller's web site: its own login (username and password, its own signed session cookie),
a mint endpoint that turns that session into a Heddle session token, and a page that embeds
Heddle's chat widget from Heddle's own URL.

Heddle never sees a password or this site's cookie; the browser gets a two-minute token that
names one user (``sub = web:<username>``) and nothing more.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from examples.mint_endpoint.app import issue_session_cookie, read_session_cookie
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from heddle.auth.jwk_keys import load_private_key, mint_session_token

STATIC = Path(__file__).with_name("static")
COOKIE = "webchat_session"
AGENT_ID = re.compile(r"agent_[A-Za-z0-9]{1,60}")
TOKEN_TTL = 120  # seconds; the widget asks again shortly before it runs out
AUDIENCE = ("service", "web-chat")  # the tool host checks that tokens name its audience


def hash_password(password: str, salt: bytes) -> bytes:
    return hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)


@dataclass
class Users:
    """Demo accounts, passwords kept only as scrypt hashes."""

    salts: dict[str, bytes] = field(default_factory=dict)
    hashes: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, str]]) -> Users:
        users = cls()
        for name, password in pairs:
            salt = secrets.token_bytes(16)
            users.salts[name], users.hashes[name] = salt, hash_password(password, salt)
        return users

    def check(self, name: str, password: str) -> bool:
        # Unknown users cost the same scrypt as known ones: no timing hint of who exists.
        salt = self.salts.get(name, b"\0" * 16)
        digest = hash_password(password, salt)
        return name in self.hashes and hmac.compare_digest(digest, self.hashes[name])


@dataclass
class SiteConfig:
    heddle_url: str
    agent_id: str
    key_id: str
    kid: str
    private_key_pem: bytes
    users: Users
    login_hint: str = ""  # shown under the login form (the demo accounts)
    session_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))


def _page(title: str, body: str, *, status: int = 200, heddle: str | None = None) -> HTMLResponse:
    # Scripts from this site and from Heddle only (the widget), nothing inline; the widget's
    # API calls and realtime socket go to Heddle.
    ws = ""
    if heddle:
        parts = urlsplit(heddle)
        ws = f" {'wss' if parts.scheme == 'https' else 'ws'}://{parts.netloc}"
    csp = (f"default-src 'self'; script-src 'self' {heddle or ''}; connect-src 'self' {heddle or ''}{ws}; "
           "style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
    document = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, interactive-widget=resizes-content">
<title>{html.escape(title)}</title><link rel="stylesheet" href="/static/site.css"></head>
<body>{body}</body></html>"""
    return HTMLResponse(document, status_code=status, headers={
        "Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store"})


def _agent_param(request: Request, source: dict | None = None) -> str:
    """`?agent=agent_…` (or the login form's hidden field) when well-formed, else ""."""
    wanted = str((source if source is not None else request.query_params).get("agent", ""))
    return wanted if AGENT_ID.fullmatch(wanted) else ""


def _home(agent: str) -> str:
    return f"/?agent={agent}" if agent else "/"


def _login_form(hint: str, error: str | None = None, username: str = "", agent: str = "") -> str:
    alert = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
    keep = f'<input type="hidden" name="agent" value="{html.escape(agent)}">' if agent else ""
    return f"""<main class="login"><h1>Acme Bank</h1><p>Log in to talk to our assistant.</p>{alert}
<form method="post" action="/login">{keep}
  <label for="username">Username</label><input id="username" name="username" autocomplete="username"
    value="{html.escape(username)}" required autofocus>
  <label for="password">Password</label><input id="password" name="password" type="password"
    autocomplete="current-password" required>
  <button type="submit">Log in</button>
</form>{f'<p class="muted">{html.escape(hint)}</p>' if hint else ""}</main>"""


def _user(request: Request) -> str | None:
    config: SiteConfig = request.app.state.config
    return read_session_cookie(request.cookies.get(COOKIE), config.session_secret)


async def index(request: Request) -> Response:
    config: SiteConfig = request.app.state.config
    user = _user(request)
    # `/?agent=agent_…` talks to another agent of the workspace (say, one an operator just made
    # in the console); Heddle itself refuses an agent the token's workspace does not own. The
    # choice goes through the login page and back.
    wanted = _agent_param(request)
    if user is None:
        return RedirectResponse(f"/login?agent={wanted}" if wanted else "/login", status_code=303)
    heddle = config.heddle_url
    agent_id = wanted or config.agent_id
    body = f"""<header class="top"><strong>Acme Bank</strong>
<span class="who"><span class="signed-in">Signed in as </span><b id="who">{html.escape(user)}</b></span>
<form method="post" action="/logout"><button type="submit">Log out</button></form></header>
<main class="page"><section class="intro"><h1>Ask our assistant</h1>
<details open><summary>What can I ask?</summary>
<p>Try <code>call: get_balance {{}}</code>, <code>call: send_transfer {{"amount": 250, "to": "Ada"}}</code>
(above 100 it asks you first), <code>call: schedule_transfer {{"amount": 20}}</code> (you confirm it
arrived), or <code>ask: What is your name?</code>.</p></details></section>
<div id="chat" data-agent="{html.escape(agent_id)}" data-heddle="{html.escape(heddle)}"></div></main>
<script src="{html.escape(heddle)}/widget/heddle-chat.js"></script>
<script src="/static/app.js"></script>"""
    return _page("Acme Bank assistant", body, heddle=heddle)


async def login_page(request: Request) -> Response:
    agent = _agent_param(request)
    if _user(request):
        return RedirectResponse(_home(agent), status_code=303)
    return _page("Log in - Acme Bank", _login_form(request.app.state.config.login_hint, agent=agent))


async def login(request: Request) -> Response:
    config: SiteConfig = request.app.state.config
    form = await request.form()
    username, password = str(form.get("username", "")).strip(), str(form.get("password", ""))
    agent = _agent_param(request, dict(form))
    if not config.users.check(username, password):
        form_html = _login_form(config.login_hint, "Wrong username or password.", username, agent)
        return _page("Log in - Acme Bank", form_html, status=401)
    response = RedirectResponse(_home(agent), status_code=303)
    response.set_cookie(COOKIE, issue_session_cookie(username, config.session_secret), httponly=True,
                        samesite="lax", secure=request.url.scheme == "https", max_age=8 * 3600)
    return response


async def logout(request: Request) -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE)
    return response


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"status": "error", "error": {"code": code, "message": message}}, status_code=status,
                        headers={"Cache-Control": "no-store"})


async def session_token(request: Request) -> JSONResponse:
    """The mint endpoint: a Heddle session token for the logged-in user, never for anyone else.

    POST with a custom header: another site cannot send that header without a CORS preflight
    this site never answers, and the SameSite cookie is not sent on its cross-site POSTs.
    """
    config: SiteConfig = request.app.state.config
    if request.headers.get("x-requested-with") != "heddle-chat":
        return _error(403, "forbidden", "Call this from the page (X-Requested-With: heddle-chat).")
    user = _user(request)
    if user is None:
        return _error(401, "unauthorized", "Log in first.")
    subject = f"web:{user}"
    token = mint_session_token(request.app.state.private_key, kid=config.kid, alg="ES256", key_id=config.key_id,
                               subject=subject, audience=AUDIENCE, ttl=TOKEN_TTL)
    return JSONResponse({"status": "success", "data": {"token": token, "expires_in": TOKEN_TTL,
                                                       "subject_ref": subject}},
                        headers={"Cache-Control": "no-store"})


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in {"app.js", "site.css"}:
        return _error(404, "not_found", "No such file.")
    media = "text/javascript" if name.endswith(".js") else "text/css"
    return FileResponse(STATIC / name, media_type=media, headers={"X-Content-Type-Options": "nosniff"})


def create_site(config: SiteConfig) -> Starlette:
    app = Starlette(routes=[
        Route("/", index),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/api/heddle/session-token", session_token, methods=["POST"]),
        Route("/static/{name}", static),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
    ])
    app.state.config = config
    app.state.private_key = load_private_key(config.private_key_pem)  # loaded once
    return app
