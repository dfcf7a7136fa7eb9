"""The one table of stable `error.code` values, and the exception every domain raises.

Handlers turn a `HeddleError` into the spec's error envelope. Adding a code means adding a row
here; the OpenAPI document and docs/errors.md are generated from this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ErrorCode:
    code: str
    status: int
    description: str


_CODES = [
    # --- request shape ---
    ErrorCode("invalid_request", 400, "The body, query or path failed validation (text holding U+0000 included); `details` names each bad field."),
    ErrorCode("not_found", 404, "No such route, or no such object visible to this caller."),
    ErrorCode("method_not_allowed", 405, "The route exists but not for this HTTP method."),
    ErrorCode("idempotency_key_reused", 409, "The Idempotency-Key was first used with another request (method, path, subject or body) in the last 24 hours."),
    ErrorCode("payload_too_large", 413, "The request body is larger than the configured limit."),
    ErrorCode("unsupported_media_type", 415, "A body was sent with a Content-Type other than application/json."),
    ErrorCode("json_too_deep", 400, "The JSON body nests objects and arrays deeper than the configured limit."),
    ErrorCode("request_timeout", 408, "The request head or body was not fully sent within the configured time."),
    ErrorCode("headers_too_large", 431, "The request headers are larger than 16 KiB in all, or too many."),
    ErrorCode("rate_limited", 429, "Too many requests for this API key or subject, too many open event streams, or too many failed authentications from this address; wait the seconds in Retry-After."),
    ErrorCode("internal_error", 500, "Unexpected server error; quote the Request-Id when reporting it."),
    ErrorCode("service_unavailable", 503, "A dependency (such as the database) is not ready, or the server holds as many connections as it may (in all or from this address)."),
    # --- authentication and authorization ---
    ErrorCode("unauthorized", 401, "Missing, malformed, expired, revoked or unverifiable credential."),
    ErrorCode("forbidden", 403, "The credential is valid but may not act on this object."),
    ErrorCode("secret_key_in_browser", 403, "A workspace secret was sent from a browser (an Origin header other than this server's own)."),
    ErrorCode("origin_not_allowed", 403, "The request Origin is not in the workspace's allowed origins."),
    ErrorCode("subject_required", 400, "A relay Loom call needs the Service-Subject header."),
    ErrorCode("subject_header_with_token", 400, "Service-Subject must not be sent with a session token."),
    ErrorCode("invalid_subject", 400, "Service-Subject or subject_ref is not one canonical subject: <channel>:<channel_user_id>, UTF-8, no control or invisible characters, at most 288 characters after Unicode NFC."),
    ErrorCode("connection_required", 400, "The agent has unpinned customer tools: name a connection (Service-Connection header or `conn` claim)."),
    ErrorCode("connection_not_found", 400, "The connection named by Service-Connection or `conn` does not exist in this workspace."),
    # --- billing ---
    ErrorCode("insufficient_credits", 402, "The workspace balance cannot pay for this call."),
    # --- identify ---
    ErrorCode("invalid_identifier", 400, "The identifier is malformed for its rail (length, characters or check digit)."),
    ErrorCode("ambiguous_identifier", 400, "The identifier fits several rails; send `rail` (and `country`) to choose."),
    # --- loom ---
    ErrorCode("agent_not_found", 404, "No such agent in this workspace."),
    ErrorCode("run_active", 409, "The thread's run is still running or awaiting an outcome (or messages are queued); `details.run_id` names it. Send `if_busy: enqueue` or `interrupt` instead."),
    ErrorCode("run_not_awaiting_outcome", 409, "The run is not waiting for an outcome of that tool call."),
    ErrorCode("invalid_state_transition", 409, "The run cannot move to that state from its current one."),
    ErrorCode("run_terminal", 409, "The run already ended (closed, or failed other than by a cancel); it cannot be cancelled."),
    ErrorCode("run_not_awaiting_approval", 409, "The run is not waiting for an approval of that tool call."),
    # --- attachments (loom/attachments/) ---
    ErrorCode("multipart_invalid", 400, "The upload is not a complete multipart/form-data body with exactly one `file` part (a truncated body, a missing boundary, another part)."),
    ErrorCode("attachment_too_large", 413, "The file is larger than HEDDLE_ATTACHMENT_MAX_BYTES (declared by Content-Length or counted while it was sent)."),
    ErrorCode("attachment_quota_exceeded", 413, "The file would take the thread's or the workspace's attachments past HEDDLE_ATTACHMENT_THREAD_BYTES or HEDDLE_ATTACHMENT_WORKSPACE_BYTES."),
    ErrorCode("attachment_type_not_allowed", 415, "The file's bytes are not one of the accepted types (PNG, JPEG, GIF, WebP, PDF, plain text, CSV, Markdown, JSON); HTML, SVG and executables are refused."),
    ErrorCode("attachment_type_mismatch", 415, "The file's name says one accepted type and its bytes another (a PNG named `.pdf`)."),
    ErrorCode("attachment_invalid", 422, "The file is of an accepted type but cannot be used: an image that does not open or is a decompression bomb, a PDF that fails to parse."),
    ErrorCode("too_many_attachments", 400, "The message names more attachments than HEDDLE_ATTACHMENTS_PER_MESSAGE, or one twice."),
    ErrorCode("attachment_in_use", 409, "The attachment already belongs to another message; upload it again to send it twice."),
    ErrorCode("model_cannot_see_images", 422, "The message has an image but the agent's model class does not take images (`vision: true` in HEDDLE_MODEL_CLASSES); `details.model_class` names it."),
    ErrorCode("memory_full", 409, "The subject already has as many remembered facts as a subject may keep (HEDDLE_MEMORY_MAX_FACTS); delete one first."),
    ErrorCode("invalid_schedule", 400, "The schedule's timing cannot be used: `at` in the past or without its offset, a cron that is not five fields or never fires, an unknown time zone, or `ends_at`/`max_runs` without a cron; `details.field` names it."),
    ErrorCode("too_many_schedules", 409, "The thread or the subject already has as many active schedules as it may (HEDDLE_SCHEDULES_MAX_PER_THREAD, HEDDLE_SCHEDULES_MAX_PER_SUBJECT)."),
    ErrorCode("agui_nothing_to_run", 400, "An AG-UI RunAgentInput with no user message, tool result or resume entry after the agent's last message: nothing to run."),
    # --- console (operators; /console/api) ---
    ErrorCode("console_unauthenticated", 401, "No operator session, or it expired or ended: open a new login link (heddle operator login-link)."),
    ErrorCode("csrf_failed", 403, "A console change without the session's X-CSRF-Token, or from another Origin."),
    ErrorCode("login_link_invalid", 410, "The console login link was already used, has expired, or never existed."),
    # --- realtime ---
    ErrorCode("realtime_disabled", 409, "Realtime is off for this workspace; poll GET /v1/loom/runs/{id}."),
]

ERROR_CODES: dict[str, ErrorCode] = {c.code: c for c in _CODES}

# Codes that appear on a failed run's `error.code` (not HTTP errors).
RUN_ERROR_CODES: dict[str, str] = {
    "insufficient_credits": "The workspace could not pay for the run's next turn.",
    "model_error": "The model provider failed after retries.",
    "model_not_configured": "The agent's model class is not configured on this server.",
    "max_turns_exceeded": "The run used more model turns than the configured maximum.",
    "max_duration_exceeded": "The run took longer than the configured maximum duration.",
    "interrupted": "The server stopped while the run was executing and it could not be resumed safely.",
    "tool_error": "A tool failed in a way the run could not continue from.",
    "connection_required": "The agent needs a connection for an unpinned tool and none was given.",
    "mint_failed": "The workspace mint_url did not return a usable subject token.",
    "tools_unavailable": "An MCP server's tools could not be listed for the run, or it no longer lists one the agent names.",
    "tool_name_clash": "Two of the agent's tools have one name (an MCP server listed a name another tool has).",
    "mcp_list_too_large": "An MCP server's tool list (all its pages) is larger than HEDDLE_MCP_MAX_LIST_BYTES.",
    "mcp_too_many_pages": "An MCP server paged its tool list past HEDDLE_MCP_MAX_PAGES pages.",
    "mcp_too_many_tools": "An MCP server lists more tools than HEDDLE_MCP_MAX_TOOLS.",
    "mcp_deadline_exceeded": "Listing an MCP server's tools (with its reconnects and resumptions) took longer than HEDDLE_MCP_CALL_DEADLINE_SECONDS.",
    "mcp_too_many_resumptions": "An MCP server ended its stream without an answer more than HEDDLE_MCP_MAX_RESUMPTIONS times.",
    "tools_over_turn_limit": "The tools one model turn would offer exceed HEDDLE_TOOLS_MAX_PER_TURN or HEDDLE_TOOLS_MAX_SCHEMA_BYTES.",
    "invalid_output": "The agent's reply did not match its output schema (`output.schema`), twice: once, then once more after being told why; the trace holds both attempts.",
    "cancelled": "The run was cancelled (POST /v1/loom/runs/{id}/cancel, or interrupted by a newer message).",
    "internal_error": "Unexpected engine error.",
}


class HeddleError(Exception):
    """An error with a stable code, rendered as the spec's error envelope."""

    def __init__(self, code: str, message: str | None = None, *, details: Any = None,
                 status: int | None = None, headers: dict[str, str] | None = None):
        known = ERROR_CODES.get(code)
        if known is None:
            raise ValueError(f"unknown error code {code!r}: add it to heddle.errors")
        self.code = code
        self.status = status or known.status
        self.message = message or known.description
        self.details = details
        self.headers = headers
        super().__init__(f"{code}: {self.message}")

    def envelope(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return {"status": "error", "error": error}
