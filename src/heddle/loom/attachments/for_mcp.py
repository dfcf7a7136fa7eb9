"""Attachments handed to MCP tools: a parameter whose input schema says `"format":
"heddle-attachment"` takes an attachment id from the model; the MCP server receives, in its
place, the content in the MCP spec's own shapes (mcp.types): an image as `ImageContent`
(`{"type": "image", "data": <base64>, "mimeType": …}`), any other file as an `EmbeddedResource`
(`{"type": "resource", "resource": {"uri": "heddle://attachments/<id>", "mimeType": …,
"text": …}}` for text, `"blob": <base64>` otherwise). Both carry the file's name and size in
`_meta` (`heddle/attachment`). An MCP call is one JSON-RPC message, so the bytes go inline
(base64), bounded by the file cap; hosted tools get a signed URL instead (for_tools.py). Only
the run's own thread's attachments are handed; another id fails the call (`attachment_not_found`).
"""

from __future__ import annotations

import base64
from typing import Any

from mcp import types
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.loom.attachments.for_tools import replace_attachments
from heddle.loom.attachments.store import read_bytes
from heddle.loom.models import Attachment, Run

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TEXT_TYPES = ("text/", "application/json")


def uri(attachment_id: Any) -> str:
    return f"heddle://attachments/{attachment_id}"


def mcp_content(row: Attachment, data: bytes) -> dict[str, Any]:
    """One attachment as the MCP spec's ImageContent or EmbeddedResource (as JSON)."""
    meta = {"heddle/attachment": {"id": str(row.id), "name": row.name, "size": row.size}}
    if row.content_type in IMAGE_TYPES:
        content: types.ImageContent | types.EmbeddedResource = types.ImageContent(
            type="image", data=base64.b64encode(data).decode("ascii"), mimeType=row.content_type, _meta=meta)
    elif row.content_type.startswith(TEXT_TYPES):
        content = types.EmbeddedResource(type="resource", _meta=meta, resource=types.TextResourceContents(
            uri=uri(row.id), mimeType=row.content_type, text=data.decode("utf-8")))
    else:
        content = types.EmbeddedResource(type="resource", _meta=meta, resource=types.BlobResourceContents(
            uri=uri(row.id), mimeType=row.content_type, blob=base64.b64encode(data).decode("ascii")))
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)


async def with_mcp_content(session: AsyncSession, run: Run, schema: dict[str, Any],
                           args: dict[str, Any]) -> dict[str, Any]:
    """`args` with each attachment id replaced by its content in the MCP spec's form."""

    async def hand(row: Attachment) -> dict[str, Any]:
        return mcp_content(row, await read_bytes(session, row.id))

    return await replace_attachments(session, run, schema, args, hand)
