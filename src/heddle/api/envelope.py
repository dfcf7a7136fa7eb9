"""The spec's response envelope: `{status: success, data}` or `{status: error, error}`."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from fastapi.responses import JSONResponse
from pydantic import BaseModel

from heddle.errors import ERROR_CODES

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    status: Literal["success"] = "success"
    data: T


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any | None = None


class ErrorEnvelope(BaseModel):
    status: Literal["error"] = "error"
    error: ErrorBody


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = None


def ok(data: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"status": "success", "data": data}, status_code=status_code, headers=headers)


def error_responses(*codes: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` for a route: each status with its error codes listed."""
    by_status: dict[int, list[str]] = {}
    for code in ("invalid_request", "internal_error", *codes):
        by_status.setdefault(ERROR_CODES[code].status, []).append(code)
    return {
        status: {
            "model": ErrorEnvelope,
            "description": "Error codes: " + ", ".join(f"`{c}`" for c in sorted(set(cs))),
        }
        for status, cs in sorted(by_status.items())
    }
