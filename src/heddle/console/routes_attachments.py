"""/console/api/workspaces/{ws}/attachments/{id}/content: an operator downloads a file a user sent
(the thread view's and the trace's thumbnails and download links), with the same headers as the
API's download (always `attachment`, nosniff, a sandbox CSP)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Request
from fastapi.responses import StreamingResponse

from heddle.console.common import reading
from heddle.loom.attachments import store
from heddle.loom.attachments.routes import download_response

router = APIRouter()


@router.get("/workspaces/{ws}/attachments/{attachment_id}/content")
async def attachment_content(request: Request, ws: str = Path(max_length=40),
                             attachment_id: str = Path(max_length=64)) -> StreamingResponse:
    async with reading(request) as s:
        row = await store.workspace_attachment(s, ws, attachment_id)
        aid, name, ctype, size = row.id, row.name, row.content_type, row.size
    return download_response(request, aid, name, ctype, size)
