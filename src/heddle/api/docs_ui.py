"""`/docs` (Swagger UI) and `/redoc` served from assets packaged with Heddle: they work offline.

The assets are vendored from npm (swagger-ui-dist 5.35.0, Apache-2.0; redoc 2.5.4, MIT; each
licence beside its files in heddle/api/static). Swagger UI 5 is the first that renders
OpenAPI 3.1. Nothing is loaded from a CDN: no Google fonts, and Swagger UI's online validator
badge is off. Redoc's bundle showed its sidebar logo ("API docs by Redocly") from a CDN,
unconditionally: the vendored redoc.standalone.js has that one URL replaced by an empty inline
SVG (`data:`), the only change to the vendored files; redo it when upgrading Redoc (a test
looks for any CDN URL in the bundle). Both pages also carry a Content-Security-Policy that
lets the browser fetch from this origin only, so anything a later bundle adds is refused.

"Try it out" in /docs calls this server (the document's `servers` is `/`), and the browser
sends this origin as `Origin`: a workspace key is accepted from it (heddle.api.headers
`from_own_origin`), so Authorize with a key works for every operation.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
ASSETS = "/_assets"
# Inline script and styles: FastAPI's pages start the viewers inline, Redoc styles at run time
# and runs its search in a blob: worker.
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
       "frame-ancestors 'self'; base-uri 'none'; form-action 'self'")


def _own_origin_only(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CSP
    return page


def install_docs(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    app.mount(ASSETS, StaticFiles(directory=STATIC), name="assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return _own_origin_only(get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{app.title} API",
            swagger_js_url=f"{ASSETS}/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/swagger-ui/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": True,
                                   "displayRequestDuration": True},
        ))

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return _own_origin_only(get_redoc_html(
            openapi_url=openapi_url, title=f"{app.title} API", redoc_js_url=f"{ASSETS}/redoc/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS}/swagger-ui/favicon-32x32.png", with_google_fonts=False))
