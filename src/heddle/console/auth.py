"""Who may call /console/api: an operator's session cookie, never a workspace key or session JWT.

Every state-changing request must also prove it comes from the console itself (CSRF): the
`X-CSRF-Token` header equal to the session's token (JavaScript on another site cannot read it),
and, when the browser names one, an `Origin` equal to the server's own (HEDDLE_PUBLIC_URL's,
never one made from the request's `Host`).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.responses import Response

from heddle import process_services
from heddle.api.deps import counting_failures
from heddle.errors import HeddleError
from heddle.operators import service as operators
from heddle.operators.service import ActiveSession

COOKIE = "heddle_console"
COOKIE_PATH = "/console"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class ConsoleOperator:
    id: str
    email: str
    csrf_token: str
    session_hash: str


_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def own_origins(request: Request) -> set[str]:
    """The console's own origin: HEDDLE_PUBLIC_URL's, or http://{host}:{port} when unset.

    Never the request's `Host` header, which the client writes: `Host: evil.test` with
    `Origin: http://evil.test` passed the check while it was trusted. A server on a loopback
    address also answers to the other loopback names at its port (a browser on the same machine
    may call it localhost); those origins can only be pages of this server.
    """
    public = urlsplit(process_services.settings(request).console_base_url())
    origins = {f"{public.scheme}://{public.netloc}".lower()}
    host = (public.hostname or "").lower()
    if host in ("127.0.0.1", "localhost", "::1") and public.port is not None:
        origins |= {f"{public.scheme}://{name}:{public.port}" for name in _LOOPBACK_NAMES}
    return origins


def same_origin(request: Request) -> bool:
    """False when the browser says the request comes from anywhere but this server's own pages.

    `Sec-Fetch-Site` (set by the browser, not by scripts) must be same-origin when sent; another
    port on the same host is `same-site`, and refused. `Origin` must be ours when sent; a page
    with `Referrer-Policy: no-referrer` (the console's) makes the browser send `Origin: null`
    even to its own origin, which is accepted only with `Sec-Fetch-Site: same-origin`.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return site == "same-origin"
    return origin.lower() in own_origins(request)


def _unauthenticated(request: Request) -> HeddleError:
    message = "No console session: sign in with a login link (heddle operator login-link --email …)."
    if request.headers.get("authorization"):
        message += " A workspace key or session token is never accepted under /console/api."
    return HeddleError("console_unauthenticated", message)


async def current_operator(request: Request) -> ConsoleOperator:
    """The signed-in operator (401 console_unauthenticated), CSRF-checked on changes (403 csrf_failed)."""
    db = process_services.database(request)
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        raise _unauthenticated(request)
    # A cookie that names no session is a failed authentication, counted per client address
    # like a wrong API key (no cookie at all is an operator who has not signed in yet).
    async with counting_failures(request):
        async with db.session() as session:
            active: ActiveSession | None = await operators.find_session(session, cookie)
        if active is None:
            raise HeddleError("console_unauthenticated", "The console session expired or ended: sign in again.")
    if request.method in UNSAFE_METHODS:
        sent = request.headers.get("x-csrf-token", "")
        if not sent or not hmac.compare_digest(sent.encode(), active.csrf_token.encode()):
            raise HeddleError("csrf_failed", "Missing or wrong X-CSRF-Token (GET /console/api/me gives it).")
        if not same_origin(request):
            raise HeddleError("csrf_failed", "Console changes are accepted only from the console's own origin.")
    if active.needs_touch:
        async with db.transaction() as session:
            await operators.touch(session, active.id_hash, process_services.settings(request).console_session_ttl)
    request.state.operator_id = active.operator_id
    return ConsoleOperator(id=active.operator_id, email=active.email, csrf_token=active.csrf_token,
                           session_hash=active.id_hash)


def set_session_cookie(request: Request, response: Response, session_id: str) -> None:
    """HttpOnly (no script reads it), SameSite=Strict (no other site sends it), Path=/console, Secure.

    Secure holds over http://127.0.0.1 and http://localhost too: browsers treat loopback as a
    secure context (checked with Chromium in tests/browser/console_login). Only plain http on
    another host needs HEDDLE_CONSOLE_INSECURE_COOKIE=true (development only).
    """
    secure = not process_services.settings(request).console_insecure_cookie
    response.set_cookie(COOKIE, session_id, path=COOKIE_PATH, httponly=True, samesite="strict", secure=secure)


def clear_session_cookie(request: Request, response: Response) -> None:
    secure = not process_services.settings(request).console_insecure_cookie
    response.delete_cookie(COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict", secure=secure)
