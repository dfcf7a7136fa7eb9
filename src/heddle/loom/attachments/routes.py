"""Attachment routes: upload to a thread, read the metadata, download the bytes.

The upload streams its body (loom/attachments/upload.py) before it opens its write session, so
no database connection or SQLite write lock waits on a slow client: the caller is authenticated
and the thread checked in a short read session first, then the file is received and inspected,
then one write transaction checks the thread and the quotas again and stores the row and its
chunks (with the Idempotency-Key's response).
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse

from heddle import process_services
from heddle.api.deps import loom_session
from heddle.api.envelope import ok
from heddle.api.operations import LOOM, UUIDPath, operation
from heddle.idempotency.http import idempotent_streamed, set_body_digest
from heddle.loom import queries as q
from heddle.loom.attachments import store
from heddle.loom.attachments.for_tools import signed_attachment
from heddle.loom.attachments.sniff import Limits, inspect, safe_name
from heddle.loom.attachments.upload import receive_file
from heddle.loom.schemas import AttachmentInfo
from heddle.loom.write_request import write_request

router = APIRouter(prefix="/v1/loom", tags=["loom"])
SUBJECT = ("Service-Subject",)

UPLOAD_BODY = {"required": True, "content": {"multipart/form-data": {
    "schema": {"type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "format": "binary",
                 "description": "The file (one part, with a filename). Its type is decided by its bytes."}}},
    "encoding": {"file": {"contentType": "application/octet-stream"}}}}}


def _limits(settings) -> Limits:
    return Limits(max_image_pixels=settings.attachment_max_image_pixels,
                  pdf_max_pages=settings.attachment_pdf_max_pages, pdf_max_chars=settings.attachment_pdf_max_chars)


def _full(row) -> dict:
    return {**store.attachment_dict(row), "thread_id": str(row.thread_id),
            "message_id": str(row.message_id) if row.message_id else None}


@router.post("/threads/{thread_id}/attachments", summary="Upload a file to a thread (multipart/form-data)",
             **operation(AttachmentInfo, auth=LOOM, status_code=201, headers=(*SUBJECT, "Idempotency-Key"),
                         body=True, request_body=UPLOAD_BODY,
                         errors=("subject_required", "not_found", "multipart_invalid", "attachment_too_large",
                                 "attachment_quota_exceeded", "attachment_type_not_allowed",
                                 "attachment_type_mismatch", "attachment_invalid")))
@idempotent_streamed
async def upload_attachment(thread_id: UUIDPath, request: Request):
    settings = process_services.settings(request)
    async with loom_session(request) as (auth, session):  # who, and whose thread: before any byte is read
        auth.require_subject()
        thread = await q.visible_thread(session, auth, thread_id)
        await store.check_quota(session, thread, 0, thread_cap=settings.attachment_thread_bytes,
                                workspace_cap=settings.attachment_workspace_bytes)
    received = await receive_file(request, limit=settings.attachment_max_bytes,
                                  timeout=settings.attachment_upload_seconds)
    try:
        name = safe_name(received.raw_name)
        verdict = inspect(received.file, name, _limits(settings))
        set_body_digest(request, hashlib.sha256(f"{received.sha256}\x1f{name}".encode()).hexdigest())
        async with write_request(request) as req:
            thread = await q.visible_thread(req.session, req.auth, thread_id)  # deleted meanwhile: 404
            await store.check_quota(req.session, thread, received.size, thread_cap=settings.attachment_thread_bytes,
                                    workspace_cap=settings.attachment_workspace_bytes)
            row = await store.insert_attachment(req.session, thread, req.auth.subject, name, verdict,
                                                received.file, received.size, received.sha256)
            return req.respond(ok(_full(row), status_code=201))
    finally:
        received.close()


@router.get("/attachments/{attachment_id}", summary="An attachment's metadata",
            **operation(AttachmentInfo, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def get_attachment(attachment_id: UUIDPath, request: Request):
    async with loom_session(request) as (auth, session):
        row = await store.visible_attachment(session, auth, attachment_id)
        return ok(_full(row))


def content_disposition(name: str) -> str:
    """RFC 6266: always `attachment`, an ASCII fallback and the UTF-8 name (RFC 8187)."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\%;' else "_" for c in name) or "file"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


_CONTENT = operation(AttachmentInfo, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found",
                                                                         "forbidden"))
_CONTENT["response_model"] = None
_CONTENT["response_class"] = StreamingResponse
_CONTENT["responses"][200] = {"description": "The bytes, with their stored type, `Content-Disposition: attachment` "
                              "and `X-Content-Type-Options: nosniff` (never rendered inline).",
                              "content": {"application/octet-stream": {"schema": {"type": "string",
                                                                                  "format": "binary"}}}}


@router.get("/attachments/{attachment_id}/content", summary="An attachment's bytes (a download)", **_CONTENT)
async def get_attachment_content(
        attachment_id: UUIDPath, request: Request,
        expires: int | None = Query(None, ge=0, description="A signed URL handed to a tool host: its expiry "
                                    "(unix seconds). With `signature`, no other credential is needed."),
        signature: str | None = Query(None, min_length=64, max_length=64, description="A signed URL's HMAC "
                                      "(heddle.toolhost.verify_attachment_url).")) -> Response:
    if signature is not None or expires is not None:
        async with process_services.database(request).session() as session:
            row = await signed_attachment(session, attachment_id, request.url.path, expires, signature)
            aid, name, ctype, size = row.id, row.name, row.content_type, row.size
    else:
        async with loom_session(request) as (auth, session):
            row = await store.visible_attachment(session, auth, attachment_id)
            aid, name, ctype, size = row.id, row.name, row.content_type, row.size
    return download_response(request, aid, name, ctype, size)


def download_response(request: Request, aid, name: str, ctype: str, size: int) -> StreamingResponse:
    """The bytes as a download, never rendered inline (also the console's download)."""
    if ctype.startswith("text/") or ctype == "application/json":
        ctype += "; charset=utf-8"
    headers = {"Content-Disposition": content_disposition(name), "X-Content-Type-Options": "nosniff",
               "Content-Length": str(size), "Content-Security-Policy": "default-src 'none'; sandbox",
               "Cache-Control": "private, no-store"}
    return StreamingResponse(store.chunks(process_services.database(request), aid), media_type=ctype,
                             headers=headers)
