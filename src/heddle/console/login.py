"""The login link: GET shows a page with one button, POST (the button) signs in.

Mail scanners and chat previews fetch links before a person clicks them; a GET that spent the
token would burn the link. So GET only looks, and the POST from the page spends it once.
"""

from __future__ import annotations

import html

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from heddle import process_services
from heddle.console.auth import same_origin, set_session_cookie
from heddle.errors import ERROR_CODES, HeddleError
from heddle.operators import service
from heddle.web.routes import console_stylesheet

router = APIRouter(include_in_schema=False)

# Nothing but the console's stylesheet (or this page's own inline style when the console is not
# built) and a form posting to this server.
CSP = "default-src 'none'; style-src {style}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
HEADERS = {
    # The token is in the URL: never sent to another site. same-origin, not no-referrer: under
    # no-referrer a browser sends `Origin: null` with the form POST, and same_origin() refuses it.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}
# Without a built console: a plain page that still reads well.
_STYLE = ("body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1f2328}"
          "button{font:inherit;padding:.6rem 1.4rem;border:0;border-radius:6px;background:#2b59c3;color:#fff;"
          "cursor:pointer}code{background:#f0f0f0;padding:0 .25rem}")


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    """The page in the console's own look: its stylesheet, its sign-in card and brand line."""
    sheet = console_stylesheet()
    style = f'<link rel="stylesheet" href="{html.escape(sheet)}">' if sheet else f"<style>{_STYLE}</style>"
    csp = CSP.format(style="'self'" if sheet else "'unsafe-inline'")
    doc = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
           f'content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">'
           f"<title>{html.escape(title)} · Heddle console</title>{style}</head><body>"
           f'<main class="center"><div class="signin card"><p class="brand-line"><span class="logo" aria-hidden="true">'
           f"</span> Heddle console</p>{body}</div></main></body></html>")
    return HTMLResponse(doc, status_code=status, headers={**HEADERS, "Content-Security-Policy": csp})


def _invalid() -> HTMLResponse:
    code = ERROR_CODES["login_link_invalid"]
    return _page("Login link not valid", (
        f'<h1>This login link cannot be used</h1><p data-code="{code.code}">Error <code>{code.code}</code>: '
        "the link was already used, has expired, or never existed. Ask for a new one "
        "(<code>heddle operator login-link --email you@example.com</code>).</p>"), status=code.status)


@router.get("/console/login/{token}")
async def login_page(token: str, request: Request) -> Response:
    async with process_services.database(request).session() as session:
        usable = await service.peek_token(session, token)
    if not usable:
        return _invalid()
    action = html.escape(f"/console/login/{token}")  # the token's alphabet is [A-Za-z0-9_-]
    return _page("Sign in", (
        "<h1>Sign in</h1><p>This one-time link signs you in to the console. It works once, for 15 minutes.</p>"
        f'<form method="post" action="{action}"><button type="submit" id="sign-in" class="btn btn-primary">'
        "Sign in</button></form>"))


@router.post("/console/login/{token}")
async def login(token: str, request: Request) -> Response:
    if not same_origin(request):  # no other site may sign a browser in (login CSRF)
        return _page("Sign-in refused", "<h1>Sign-in refused</h1><p>Error <code>csrf_failed</code>: the "
                     "sign-in did not come from this server's page.</p>", status=403)
    try:
        async with process_services.database(request).transaction() as session:
            opened = await service.consume_token(session, token, process_services.settings(request).console_session_ttl)
    except HeddleError:
        return _invalid()
    response = RedirectResponse("/console", status_code=303, headers={"Cache-Control": "no-store"})
    set_session_cookie(request, response, opened.session_id)
    return response
