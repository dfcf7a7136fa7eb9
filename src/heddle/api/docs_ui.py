"""`/docs` (Swagger UI) and `/redoc` served from assets packaged with Heddle: they work offline.

The assets are vendored from npm (swagger-ui-dist 5.35.0, Apache-2.0; redoc 2.5.4, MIT; each
licence beside its files in heddle/api/static). Swagger UI 5 is the first that renders
OpenAPI 3.1. Nothing is loaded from a CDN: no Google fonts, and Swagger UI's online validator
badge is off.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
ASSETS = "/_assets"


def install_docs(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    app.mount(ASSETS, StaticFiles(directory=STATIC), name="assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{app.title} API",
            swagger_js_url=f"{ASSETS}/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/swagger-ui/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": True,
                                   "displayRequestDuration": True},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=openapi_url, title=f"{app.title} API",
                              redoc_js_url=f"{ASSETS}/redoc/redoc.standalone.js",
                              redoc_favicon_url=f"{ASSETS}/swagger-ui/favicon-32x32.png", with_google_fonts=False)
