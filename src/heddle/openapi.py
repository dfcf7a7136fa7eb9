"""The OpenAPI document: version 1.0.0, the envelope, and the table of every error code.

It is assembled from the whole app (every domain's routes, the webhook bodies), so it lives
beside app.py, above the domains; api/ below keeps only what every route shares.
FastAPI builds it from the routes (each declares itself with heddle.api.operations.operation);
`finish_document` then adds what FastAPI cannot know: the two bearer schemes, the Request-Id
header on every response, components for hand-parsed bodies, readable names for the generic
envelopes, and no FastAPI 422 (the server answers invalid input with 400 `invalid_request`; a 422
is only one of Heddle's own codes, such as `attachment_invalid`).
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from heddle.api.envelope import ReadModel
from heddle.api.operations import EXTRA_SCHEMAS, RESPONSE_HEADERS, response_header
from heddle.errors import ERROR_CODES, RUN_ERROR_CODES
from heddle.webhooks.schemas import WEBHOOK_TYPES, WebhookEvent

SECURITY_SCHEMES = {
    "workspaceKey": {
        "type": "http", "scheme": "bearer",
        "description": ("Relay mode and Identify: a workspace secret `sk_live_…` (or `sk_test_…`), kept on your "
                        "server. Loom calls add `Service-Subject`."),
    },
    "sessionToken": {
        "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
        "description": ("Direct mode (Loom only): a short-lived session token signed by your key (`iss` = key id, "
                        "`aud` includes `service`, `sub` = the user, optional `conn`)."),
    },
}
TAGS = [
    {"name": "identify", "description": "Resolve an identifier to its institution, rails and holder name."},
    {"name": "loom", "description": "Agent conversations: threads, messages, runs, traces and outcomes."},
    {"name": "realtime", "description": "Thread events over the Pusher protocol (pusher-js)."},
    {"name": "interop", "description": "Agents over AG-UI (RunAgentInput in, AG-UI events out) and A2A "
                                       "(agent cards, JSON-RPC) (docs/interop.md)."},
    {"name": "workspace", "description": "The calling workspace."},
    {"name": "operations", "description": "Liveness and readiness."},
    # Last, after every operation: /docs and /redoc open on the operations and Authorize, not on
    # the table (its description, filled in by `_tags()`).
    {"name": "errors", "x-displayName": "Error codes", "description": ""},
]
# Where the overview sends a reader for the codes (the description no longer carries the table).
ERRORS_POINTER = ("\n\nEvery error code, with its HTTP status and meaning, is listed under **errors** (\"Error "
                  "codes\" in /redoc) after the operations, and in `info.x-error-codes`.")

# What /docs "Try it out" fills a request body with: values the server accepts as they stand,
# or, for an id only the caller's workspace has, a placeholder that says so (a made-up id would
# look real and answer 404). Keyed by operationId; each becomes the body's named `examples`.
_YOUR_AGENT = "agent_replacewithyouragentid"
REQUEST_EXAMPLES: dict[str, dict[str, dict[str, Any]]] = {
    "identify": {
        "bic": {"summary": "A BIC", "value": {"identifier": "DEUTDEFF"}},
        "iban": {"summary": "An IBAN", "value": {"identifier": "DE89370400440532013000"}},
    },
    "create_thread": {"agent": {
        "summary": "A thread with one of your agents",
        "description": ("Replace the id with one of your workspace's agents (`heddle agent create` prints it; the "
                        "console lists them). With a workspace key the person is the `Service-Subject` header; "
                        "`subject_ref` is only for a key that sends none."),
        "value": {"agent": _YOUR_AGENT}}},
    "post_message": {"message": {"summary": "A message", "value": {"content": "Hello! What can you do for me?"}}},
    "post_outcome": {"occurred": {
        "summary": "The action happened",
        "description": "`tool_call_id` is the run's `pending.tool_call_id` (GET /v1/loom/runs/{run_id}).",
        "value": {"tool_call_id": "replace-with-pending-tool-call-id", "state": "occurred"}}},
    "post_approval": {"approve": {
        "summary": "Approve the pending call",
        "description": "`tool_call_id` is the run's `pending.tool_call_id` (GET /v1/loom/runs/{run_id}).",
        "value": {"tool_call_id": "replace-with-pending-tool-call-id", "approved": True}}},
}
_GENERIC = re.compile(r"^(Envelope|Page)_(\w+?)_$")


def error_table_markdown() -> str:
    rows = ["| code | HTTP status | meaning |", "|---|---|---|"]
    rows += [f"| `{c.code}` | {c.status} | {c.description} |" for c in ERROR_CODES.values()]
    run_rows = ["| run `error.code` | meaning |", "|---|---|"]
    run_rows += [f"| `{code}` | {text} |" for code, text in RUN_ERROR_CODES.items()]
    return "\n".join(rows) + "\n\nA `failed` run carries `error: {code, message}`:\n\n" + "\n".join(run_rows)


def errors_document() -> str:
    """docs/errors.md, generated from heddle.errors (a test keeps the file in sync)."""
    return ("# Error codes\n\nEvery error is `{\"status\": \"error\", \"error\": {\"code\", \"message\", "
            "\"details\"}}`. Codes are stable; messages are for people.\n\n"
            "<!-- generated by heddle.openapi.errors_document(); edit heddle/errors.py -->\n\n"
            + error_table_markdown() + "\n")


def _tags() -> list[dict[str, Any]]:
    # `<channel>` would be read as an HTML tag by the doc viewers
    table = error_table_markdown().replace("<", "&lt;")
    return [{**tag, "description": table} if tag["name"] == "errors" else tag for tag in TAGS]


def _request_examples(doc: dict[str, Any]) -> None:
    for path_item in doc.get("paths", {}).values():
        for op in path_item.values():
            examples = REQUEST_EXAMPLES.get(op.get("operationId", ""))
            if examples and "requestBody" in op:
                op["requestBody"]["content"]["application/json"]["examples"] = examples


def install_openapi(app: FastAPI) -> None:
    def build():
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, routes=app.routes, tags=_tags(),
            description=app.description.rstrip() + ERRORS_POINTER,
            license_info={"name": "Apache-2.0", "identifier": "Apache-2.0"},
        )
        schema["info"]["x-error-codes"] = [
            {"code": c.code, "status": c.status, "description": c.description}
            for c in ERROR_CODES.values()
        ]
        schema["info"]["x-run-error-codes"] = [
            {"code": code, "description": text} for code, text in RUN_ERROR_CODES.items()
        ]
        app.openapi_schema = finish_document(schema)
        return app.openapi_schema

    app.openapi = build


def _webhooks(doc: dict[str, Any]) -> None:
    """OpenAPI 3.1 `webhooks`: what Heddle POSTs to a workspace's webhook URL."""
    if WebhookEvent not in EXTRA_SCHEMAS:
        EXTRA_SCHEMAS.append(WebhookEvent)
    body = {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/WebhookEvent"}}}}
    headers = [{"name": "Service-Signature", "in": "header", "required": True, "schema": {"type": "string"},
                "description": ("`t=<unix seconds>,v1=<hex HMAC-SHA256>` under the webhook secret "
                                "(docs/streaming-and-webhooks.md).")}]
    # security: [] -- Heddle signs the request (Service-Signature); it sends no bearer credential.
    summaries = {"memory.created": "A fact was remembered about a subject",
                 "memory.deleted": "A fact remembered about a subject was deleted"}
    doc["webhooks"] = {kind: {"post": {
        "summary": summaries.get(kind, f"The run entered `{kind.split('.', 1)[1]}`" if kind.startswith("run.")
                                 else "A subject rated an answer, or withdrew its rating"),
        "operationId": f"webhook_{kind.replace('.', '_')}",
        "parameters": headers, "requestBody": body, "security": [],
        "responses": {"2XX": {"description": "Received; any other answer is retried with backoff."}}}}
        for kind in WEBHOOK_TYPES}


# Relative: the API is on the origin that serves this document (so /docs "Try it out" calls it).
SERVERS = [{"url": "/", "description": "This Heddle server (the origin serving this document)."}]
DEFAULT_ERROR = {"description": "Any other error, in the error envelope (see the error table).",
                 "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}}


def _webhook_body(schemas: dict[str, Any]) -> None:
    """The webhook body's `data` is the Run schema (`run.*`), the Feedback schema
    (`message.feedback`) or the Memory schema (`memory.*`), and its example a closed run (the
    Run schema's own example, finished): heddle/webhooks/schemas.py sits below loom and cannot
    name the Run model itself."""
    event, run = schemas.get("WebhookEvent"), schemas.get("Run")
    if event is not None and run is not None:
        refs = [{"$ref": f"#/components/schemas/{name}"}
                for name in ("Run", "Feedback", "Memory") if name in schemas]
        event["properties"]["data"] = refs[0] if len(refs) == 1 else {
            "description": "The Run for run.* events, the Feedback for message.feedback, the Memory for memory.*.",
            "oneOf": refs}
        event["examples"] = [{
            "id": "evt_5f1c0b7e2a9d4c3b8a716e2f", "type": "run.closed", "created_at": "2026-01-01T12:00:02Z",
            "data": {**run["examples"][0], "state": "closed", "terminal": True, "pending": None}}]


def finish_document(doc: dict[str, Any]) -> dict[str, Any]:
    doc["servers"] = SERVERS
    _webhooks(doc)
    components = doc.setdefault("components", {})
    components["securitySchemes"] = SECURITY_SCHEMES
    components["headers"] = RESPONSE_HEADERS
    schemas = components.setdefault("schemas", {})
    for model in EXTRA_SCHEMAS:
        # A read model (the webhook body) is published as Heddle sends it, a request body as it is read.
        mode = "serialization" if issubclass(model, ReadModel) else "validation"
        extra = model.model_json_schema(ref_template="#/components/schemas/{model}", mode=mode)
        schemas.update(extra.pop("$defs", {}))
        schemas[model.__name__] = extra
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    _restore_examples(schemas)
    _webhook_body(schemas)
    _request_examples(doc)
    for path_item in doc.get("paths", {}).values():
        for op in path_item.values():
            responses = op.get("responses", {})
            if "Error codes:" not in responses.get("422", {}).get("description", "Error codes:"):
                responses.pop("422")  # FastAPI's validation answer: Heddle's is 400 invalid_request
            responses.setdefault("default", {**DEFAULT_ERROR})
            for status, response in responses.items():
                headers = response.setdefault("headers", {})
                headers["Request-Id"] = response_header("Request-Id")
                if status in ("429", "503"):
                    headers["Retry-After"] = response_header("Retry-After")
    return _rename_generics(doc)


def _restore_examples(schemas: dict[str, Any]) -> None:
    """Put back the read models' own examples: FastAPI drops every null from the document
    (`exclude_none`), the nulls of an example too, which left examples breaking their schemas."""
    pending = list(ReadModel.__subclasses__())
    while pending:
        model = pending.pop()
        pending += model.__subclasses__()
        extra = model.model_config.get("json_schema_extra")
        if isinstance(extra, dict) and "examples" in extra and model.__name__ in schemas:
            schemas[model.__name__]["examples"] = extra["examples"]


def _rename_generics(doc: dict[str, Any]) -> dict[str, Any]:
    """`Envelope_Run_` -> `RunEnvelope`, `Page_Thread_` -> `ThreadPage` (names generated clients use)."""
    schemas = doc["components"]["schemas"]
    renames: dict[str, str] = {}
    for name in list(schemas):
        new = name
        while (m := _GENERIC.match(new)):  # Envelope_Page_Thread__ -> ThreadPageEnvelope
            inner = m.group(2)
            inner = renames.get(inner, _GENERIC.sub(lambda g: g.group(2) + g.group(1), inner))
            new = inner + m.group(1)
        if new != name:
            renames[name] = new
    if not renames:
        return doc

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str) and value.startswith("#/components/schemas/"):
                    target = value.rsplit("/", 1)[1]
                    value = "#/components/schemas/" + renames.get(target, target)
                out[key] = walk(value)
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    doc = walk(doc)
    doc["components"]["schemas"] = {renames.get(k, k): v for k, v in doc["components"]["schemas"].items()}
    return doc

