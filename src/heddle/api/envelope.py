"""The spec's response envelope: `{status: success, data}` or `{status: error, error}`.

Read models (the `data` of every response, and every realtime event payload) derive from
`ReadModel`; a route declares `response_model=Envelope[Thing]` so that one class describes the
object in the handler's output, in the OpenAPI document and in the events that carry it.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

from fastapi.responses import JSONResponse
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)

from heddle.errors import ERROR_CODES

T = TypeVar("T")


class ReadModel(BaseModel):
    """Base of every response object: strict when built, open in the published schema.

    Extra fields are refused when Heddle builds a read model (a field missing from the model
    fails loudly in tests instead of vanishing from responses), but the published schema stays
    open: a client generated today must keep working when a later version adds a field.
    """

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _tolerate_newer_servers(cls, data: Any, info: ValidationInfo) -> Any:
        # heddle.client parses responses with context {"lenient": True}: a newer server's extra
        # fields are dropped there instead of failing the call.
        if info.context and info.context.get("lenient") and isinstance(data, dict):
            return {k: v for k, v in data.items() if k in cls.model_fields}
        return data

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        schema = handler(core_schema)
        handler.resolve_ref_schema(schema).pop("additionalProperties", None)
        return schema


# Credits are integers of micro-credits inside and JSON numbers outside: a whole amount is sent
# as an integer (`1`), a fraction as a float (`0.25`); `int | float` keeps that exact form.
Credits = Annotated[int | float, WithJsonSchema({"type": "number", "description": "Credits (up to 6 decimals)."})]
# Timestamps are produced by heddle.timeutil.iso (UTC, `Z`); kept as strings so the bytes sent
# are the ones the server formatted.
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time",
                                           "examples": ["2026-01-01T12:00:00.000000Z"]})]
NullableTimestamp = Annotated[str | None, WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"},
                                                                    {"type": "null"}]})]
UUIDStr = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]


class Envelope(BaseModel, Generic[T]):
    # `status` is always sent: required in the published schema although it has a default.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)
    status: Literal["success"] = "success"
    data: T

    @classmethod
    def model_parametrized_name(cls, params: tuple[type[Any], ...]) -> str:
        return f"{params[0].__name__}Envelope"  # RunEnvelope, not Envelope_Run_


class ErrorBody(BaseModel):
    code: str = Field(description="Stable machine-readable code (see the error table).",
                      examples=["invalid_request"])
    message: str = Field(description="Human-readable explanation.", examples=["Invalid request: check content."])
    # Absent when there is nothing to add (so not required); any JSON value when present.
    details: Any = Field(None, description="Extra context, such as the fields that failed validation.")


class ErrorEnvelope(BaseModel):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)
    status: Literal["error"] = "error"
    error: ErrorBody


class Page(ReadModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(description="Pass as `after` for the next page; null on the last page.")

    @classmethod
    def model_parametrized_name(cls, params: tuple[type[Any], ...]) -> str:
        return f"{params[0].__name__}Page"


def ok(data: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"status": "success", "data": data}, status_code=status_code, headers=headers)


def error_responses(*codes: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` for a route: each status with its error codes listed.

    Codes not (yet) in the error table are skipped, so a route may name codes that another
    part of the service adds later (`rate_limited`, `idempotency_key_reused`).
    """
    by_status: dict[int, list[str]] = {}
    for code in ("invalid_request", "internal_error", *codes):
        if code in ERROR_CODES:
            by_status.setdefault(ERROR_CODES[code].status, []).append(code)
    return {
        status: {
            "model": ErrorEnvelope,
            "description": "Error codes: " + ", ".join(f"`{c}`" for c in sorted(set(cs))),
            "content": {"application/json": {"examples": {
                c: {"summary": ERROR_CODES[c].description,
                    "value": {"status": "error", "error": {"code": c, "message": ERROR_CODES[c].description}}}
                for c in sorted(set(cs))}}},
        }
        for status, cs in sorted(by_status.items())
    }
