"""The OpenAPI document: version 1.0.0, the envelope, and the table of every error code."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from heddle.errors import ERROR_CODES, RUN_ERROR_CODES


def error_table_markdown() -> str:
    rows = ["| code | HTTP status | meaning |", "|---|---|---|"]
    rows += [f"| `{c.code}` | {c.status} | {c.description} |" for c in ERROR_CODES.values()]
    run_rows = ["| run `error.code` | meaning |", "|---|---|"]
    run_rows += [f"| `{code}` | {text} |" for code, text in RUN_ERROR_CODES.items()]
    return "\n".join(rows) + "\n\nA `failed` run carries `error: {code, message}`:\n\n" + "\n".join(run_rows)


def install_openapi(app: FastAPI) -> None:
    def build():
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, routes=app.routes,
            description=app.description + "\n\n## Error codes\n\n" + error_table_markdown(),
        )
        schema["info"]["x-error-codes"] = [
            {"code": c.code, "status": c.status, "description": c.description}
            for c in ERROR_CODES.values()
        ]
        schema["info"]["x-run-error-codes"] = [
            {"code": code, "description": text} for code, text in RUN_ERROR_CODES.items()
        ]
        schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
            "type": "http", "scheme": "bearer",
            "description": "A workspace secret `sk_…` (relay) or a session token JWT (direct).",
        }
        app.openapi_schema = schema
        return schema

    app.openapi = build
