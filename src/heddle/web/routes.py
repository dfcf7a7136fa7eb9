"""Static serving of the built console and widget, with no CDN and strict headers.

The console is a single-page app: every /console/... path that is not an API route or a login
link answers index.html, and the app routes on the client. Hashed asset files are cached for a
year; index.html and the widget (a stable URL that integrators embed) are revalidated.
"""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, Response

from heddle.errors import HeddleError

STATIC = Path(__file__).parent / "static"
CONSOLE = STATIC / "console"
WIDGET = STATIC / "widget" / "heddle-chat.js"

# The console talks only to its own origin; nothing inline, nothing from elsewhere.
CONSOLE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

NOT_BUILT = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Heddle console</title></head>
<body><h1>The console is not built</h1><p>This server has no built {what}. From a checkout, run
<code>make web</code> (Node.js and npm), then restart <code>heddle serve</code>.</p></body></html>"""

# Paths under /console that belong to the server, never to the single-page app.
SERVER_PREFIXES = ("api/", "login/")

router = APIRouter(include_in_schema=False)
_STYLESHEET = re.compile(r'<link rel="stylesheet"[^>]*href="(/console/assets/[A-Za-z0-9_.-]+\.css)"')


def console_stylesheet() -> str | None:
    """The built console's stylesheet (its name carries a content hash), for the server-rendered
    pages that should look like the console (the login link page); None when not built."""
    try:
        found = _STYLESHEET.search((CONSOLE / "index.html").read_text())
    except OSError:
        return None
    return found.group(1) if found else None


def _console_index() -> Response:
    index = CONSOLE / "index.html"
    if not index.is_file():
        return HTMLResponse(NOT_BUILT.format(what="console"), status_code=503, headers=CONSOLE_HEADERS)
    return FileResponse(index, media_type="text/html", headers={**CONSOLE_HEADERS, "Cache-Control": "no-cache"})


@router.get("/console")
async def console_root() -> Response:
    return _console_index()


@router.get("/console/{path:path}")
async def console_path(path: str) -> Response:
    if path == "api" or path.startswith(SERVER_PREFIXES):
        raise HeddleError("not_found", "No such console route.")
    if path.startswith("assets/"):
        asset = (CONSOLE / path).resolve()
        if not asset.is_relative_to(CONSOLE.resolve()) or not asset.is_file():
            raise HeddleError("not_found", "No such console asset.")
        media_type = mimetypes.guess_type(asset.name)[0] or "application/octet-stream"
        return FileResponse(asset, media_type=media_type, headers={
            **CONSOLE_HEADERS, "Cache-Control": "public, max-age=31536000, immutable"})
    return _console_index()


@router.get("/widget/heddle-chat.js")
async def widget_script() -> Response:
    if not WIDGET.is_file():
        raise HeddleError("not_found", "The chat widget is not built on this server (make web).")
    return FileResponse(WIDGET, media_type="text/javascript", headers={
        "Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff",
        # Pages on any origin embed it with a <script> tag; crossorigin="anonymous" also works.
        "Access-Control-Allow-Origin": "*", "Cross-Origin-Resource-Policy": "cross-origin"})
