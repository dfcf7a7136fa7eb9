"""How a route declares itself: its typed success body, who may call it, its headers, its errors.

Every `/v1` route spreads `**operation(...)` into its decorator, so the OpenAPI document (and the
clients generated from it) knows the success body, the security schemes, the Heddle headers and
the error codes of each operation:

    @router.get("/runs/{run_id}", summary="A run",
                **operation(Run, auth=LOOM, headers=("Service-Subject",), errors=("not_found",)))
    async def get_run(...) -> dict: return {"status": "success", "data": ...}

The handler returns the envelope as a dict (or model); FastAPI validates it against
`Envelope[Run]` and serialises it, so a field missing from the read model fails loudly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

from fastapi import Path, Request
from pydantic import BaseModel

from heddle.api.envelope import Envelope, error_responses
from heddle.errors import ERROR_CODES, HeddleError

# A path id: documented as a UUID, taken as a string so that a malformed id is a plain 404
# (`not_found`), exactly like an unknown one, rather than a validation error.
UUIDPath = Annotated[str, Path(json_schema_extra={"format": "uuid"})]

# A canonical subject as far as a regular expression can say (heddle.auth.subjects has the whole
# rule: NFC, no invisible or unassigned characters): `<channel>:<channel_user_id>`, no control
# characters. Used by Service-Subject and the `{subject}` path parameter.
SUBJECT_SCHEMA = {"type": "string", "minLength": 3, "maxLength": 288,
                  "pattern": r"^[a-z0-9][a-z0-9_.\-]{0,31}:[^\s:\x00-\x1f\x7f-\x9f][^\s\x00-\x1f\x7f-\x9f]*$"}
SubjectPath = Annotated[str, Path(json_schema_extra={
    **SUBJECT_SCHEMA, "description": "The person's subject, `<channel>:<channel_user_id>`.",
    "examples": ["web:alice"]})]

# Security requirements (the schemes themselves are in heddle.openapi).
WORKSPACE_KEY: list[dict[str, list[str]]] = [{"workspaceKey": []}]
LOOM: list[dict[str, list[str]]] = [{"workspaceKey": []}, {"sessionToken": []}]

HEADERS: dict[str, dict[str, Any]] = {
    "Service-Subject": {
        "description": ("Relay mode (workspace key) only: the person the backend acts for, "
                        "`<channel>:<channel_user_id>`. Must not be sent with a session token."),
        "schema": SUBJECT_SCHEMA,
        "example": "web:alice",
    },
    "Service-Connection": {
        "description": ("Relay mode only: the connection (id or name, such as `payments`) whose host serves the "
                        "agent's unpinned tools. Direct mode uses the token's `conn` claim."),
        # No `example`: /docs "Try it out" would send it, and a connection the workspace lacks is 400.
        "schema": {"type": "string", "maxLength": 100},
    },
    "Service-Run": {
        "description": ("Attribute this call to a Loom run of the same workspace (it then appears in the trace). "
                        "Anything but a run id (a UUID) is 400 `invalid_request`."),
        "schema": {"type": "string", "format": "uuid"},
    },
    "Idempotency-Key": {
        "description": ("Safe retries: the same key with the same body replays the first response "
                        "(`Idempotent-Replayed: true`); with another body, 409 `idempotency_key_reused`. "
                        "Kept 24 hours per workspace."),
        # visible ASCII only, as heddle.idempotency.http checks it
        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
    },
}
# Idempotency-Key is declared once the server implements it (its error code is in the table).
_HEADER_NEEDS_CODE = {"Idempotency-Key": "idempotency_key_reused"}

# Errors every /v1 operation can give, when their codes exist: 405 is the answer to another
# method on the same path, 503 to a database that does not answer.
_COMMON = ("unauthorized", "rate_limited", "headers_too_large", "method_not_allowed", "service_unavailable")
_LOOM_AUTH = ("secret_key_in_browser", "origin_not_allowed", "subject_header_with_token", "invalid_subject")
_BODY = ("payload_too_large", "unsupported_media_type", "json_too_deep", "request_timeout")

# Response headers, published once under `components/headers` by heddle.openapi, which also
# puts Request-Id on every response and Retry-After on every 429 and 503.
RESPONSE_HEADERS: dict[str, dict[str, Any]] = {
    "Request-Id": {"description": "This request's id; quote it when reporting a problem.",
                   "schema": {"type": "string"}},
    "Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer", "minimum": 0}},
    "Idempotent-Replayed": {
        "description": "`true` when this is the stored response to an earlier request with the same Idempotency-Key.",
        "schema": {"type": "string", "enum": ["true"]}},
}


def response_header(name: str) -> dict[str, str]:
    assert name in RESPONSE_HEADERS, name
    return {"$ref": f"#/components/headers/{name}"}


_KNOWN_QUERY: dict[int, frozenset[str]] = {}  # per route: the query parameters it declares


def refuse_unknown_query(request: Request) -> None:
    """400 for a query parameter the operation does not declare (`?limt=5` is a mistake to
    say, not to ignore), as an unknown body field is; the document says the same.

    Called by authentication (heddle.api.deps), which every /v1 operation runs: a FastAPI
    dependency of its own cost about 10 us a request on a quiet machine (bench/query_check.py),
    this call 1-2 us."""
    if not request.scope.get("query_string"):
        return
    route = request.scope.get("route")
    if route is None:
        return
    known = _KNOWN_QUERY.get(id(route))
    if known is None:
        known = _KNOWN_QUERY[id(route)] = frozenset(_query_names(route.dependant))
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise HeddleError("invalid_request", f"Unknown query parameter {unknown[0]!r}.", details=[
            {"location": "query", "field": name, "message": "unknown parameter"} for name in unknown])


def _query_names(dependant: Any) -> Iterable[str]:
    yield from (param.alias for param in dependant.query_params)
    for sub in dependant.dependencies:
        yield from _query_names(sub)


def header_parameter(name: str, *, required: bool = False) -> dict[str, Any]:
    spec = HEADERS[name]
    param = {"name": name, "in": "header", "required": required, "description": spec["description"],
             "schema": spec["schema"]}
    if "example" in spec:
        param["example"] = spec["example"]
    return param


def operation(data: Any, *, auth: list[dict[str, list[str]]], headers: Iterable[str] = (),
              required_headers: Iterable[str] = (), errors: Sequence[str] = (), body: bool = False,
              status_code: int = 200, also: dict[int, str] | None = None,
              request_body: dict[str, Any] | None = None, envelope: Any = None,
              event_stream: str | None = None) -> dict[str, Any]:
    """Route keyword arguments for one operation.

    `data`: the read model of `data` in the success envelope. `auth`: WORKSPACE_KEY or LOOM.
    `headers`/`required_headers`: names from HEADERS (Service-Run is added to every operation).
    `errors`: the operation's own error codes. `body`: it takes a request body (413/415 apply).
    `also`: other success statuses with their description (same body). `request_body`: an
    explicit OpenAPI requestBody (for handlers that read the body themselves). `envelope`: a
    whole success body other than `Envelope[data]` (pusher-js's channel auth). `event_stream`: the
    success body is Server-Sent Events (`text/event-stream`), described by this text.
    """
    codes = list(_COMMON)
    if auth is LOOM:
        codes += _LOOM_AUTH
    else:
        codes.append("secret_key_in_browser")
    if body:
        codes += _BODY
    if "Idempotency-Key" in (*headers, *required_headers):
        codes.append("idempotency_key_reused")
    codes += errors
    envelope = None if event_stream else envelope or Envelope[data]
    responses: dict[int | str, dict[str, Any]] = error_responses(*codes)
    if event_stream:
        responses[status_code] = {"description": event_stream,
                                  "content": {"text/event-stream": {"schema": {"type": "string"}}}}
    for status, description in (also or {}).items():
        responses[status] = {"model": envelope, "description": description}
    if "idempotency_key_reused" in codes and "Idempotency-Key" in HEADERS:
        for status in (status_code, *(also or {})):
            responses.setdefault(status, {}).setdefault("headers", {})["Idempotent-Replayed"] = response_header(
                "Idempotent-Replayed")
    required = set(required_headers)
    parameters = [header_parameter(name, required=name in required)
                  for name in (*required_headers, *headers, "Service-Run")
                  if name not in _HEADER_NEEDS_CODE or _HEADER_NEEDS_CODE[name] in ERROR_CODES]
    extra: dict[str, Any] = {"security": auth, "parameters": parameters}
    if request_body is not None:
        extra["requestBody"] = request_body
    kwargs = {"response_model": envelope, "status_code": status_code, "responses": responses, "openapi_extra": extra}
    if event_stream:
        from fastapi.responses import StreamingResponse

        kwargs["response_class"] = StreamingResponse
    return kwargs


# Models referenced only from hand-written OpenAPI fragments (request bodies a handler parses
# itself); heddle.openapi adds them to the document's components.
EXTRA_SCHEMAS: list[type[BaseModel]] = []


def raw_request_body(model: type[BaseModel], *media_types: str) -> dict[str, Any]:
    """A requestBody for `model` under each media type, for a handler that reads the body itself."""
    if model not in EXTRA_SCHEMAS:
        EXTRA_SCHEMAS.append(model)
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"required": True, "content": {m: {"schema": ref} for m in media_types or ("application/json",)}}
