"""What a model turn gets from its messages' attachments, and what its trace keeps of them.

Images go to a model class with `vision: true` as image parts (each provider renders its own
format: OpenAI `image_url` data URLs, Anthropic `image` blocks, providers/); a document (PDF
text, a text file) goes to every model as text with its name. An image for a class without
vision is left out and the trace says so (a posted message cannot get there: it is refused at
once, loom/attachments/rules.py; an agent moved to another class later can).

The budget of earlier messages counts attachments like text, an image as its provider
estimates it (`image_tokens`). The bytes are read for the turn only, in two statements at most
(documents' text, then the chunks), and only when the conversation has attachments: a run
without any costs the statements it did before. The turn's stored request keeps references
(`attachment:<id>`), never the bytes (`stored_request`).
"""

from __future__ import annotations

import base64
import math
import uuid
from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.loom.attachments.sniff import IMAGE_TYPES, PDF
from heddle.loom.models import Attachment, AttachmentChunk
from heddle.loom.providers.base import AttachmentPart, ChatMessage

TEXT_CHARS = 100_000  # of a text file, as of a PDF by default (HEDDLE_ATTACHMENT_PDF_MAX_CHARS)


def image_tokens(width: int, height: int, provider: str) -> int:
    """An image's input tokens as its provider counts them: OpenAI's tiles (fit in 2048, shortest
    side 768, 170 a 512-pixel tile plus 85), Anthropic's width*height/750 after fitting in 1568."""
    if width <= 0 or height <= 0:
        return 85
    if provider == "anthropic":
        scale = min(1.0, 1568 / max(width, height))
        return max(1, math.ceil(width * scale * height * scale / 750))
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def attachment_tokens(meta: dict[str, Any], provider: str) -> int:
    """What one attachment costs the history budget (from its metadata; nothing is read)."""
    if meta.get("content_type") in IMAGE_TYPES:
        if provider == "scripted":
            return 1
        return image_tokens(int(meta.get("width") or 0), int(meta.get("height") or 0), provider)
    chars = meta.get("text_chars") if meta.get("content_type") == PDF else meta.get("size")
    chars = min(int(chars or 0), TEXT_CHARS)
    return max(1, chars // 6) if provider == "scripted" else (chars + 3) // 4 + 8


def ref(meta: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": meta["id"], "name": meta["name"], "content_type": meta["content_type"], **extra}


async def load_parts(session: AsyncSession, metas: list[dict[str, Any]], *, vision: bool,
                     report: dict[str, Any]) -> dict[str, AttachmentPart]:
    """The parts to send for these attachments, by id; `report` gets `sent` and `left_out`."""
    sent, left_out = report.setdefault("sent", []), report.setdefault("left_out", [])
    wanted: list[dict[str, Any]] = []
    for meta in metas:
        if meta["content_type"] in IMAGE_TYPES and not vision:
            left_out.append(ref(meta, reason="model_cannot_see_images"))
        else:
            wanted.append(meta)
    if not wanted:
        return {}
    pdf_ids = [m["id"] for m in wanted if m["content_type"] == PDF]
    byte_ids = [m["id"] for m in wanted if m["content_type"] != PDF]
    texts: dict[str, str] = {}
    if pdf_ids:
        rows = await session.execute(select(Attachment.id, Attachment.text).where(
            Attachment.id.in_([_uuid(i) for i in pdf_ids])))
        texts = {str(r.id): r.text or "" for r in rows}
    data: dict[str, list[bytes]] = defaultdict(list)
    if byte_ids:
        rows = await session.execute(select(AttachmentChunk.attachment_id, AttachmentChunk.data).where(
            AttachmentChunk.attachment_id.in_([_uuid(i) for i in byte_ids]))
            .order_by(AttachmentChunk.attachment_id, AttachmentChunk.seq))
        for r in rows:
            data[str(r.attachment_id)].append(bytes(r.data))
    parts: dict[str, AttachmentPart] = {}
    for meta in wanted:
        aid = meta["id"]
        if meta["content_type"] == PDF:
            if aid not in texts:
                left_out.append(ref(meta, reason="erased"))
                continue
            text = texts[aid] or "(This PDF has no text layer: it may be a scan; its pages were not read.)"
            parts[aid] = AttachmentPart("text", aid, meta["name"], PDF, text)
        elif aid not in data:
            left_out.append(ref(meta, reason="erased"))
            continue
        elif meta["content_type"] in IMAGE_TYPES:
            parts[aid] = AttachmentPart("image", aid, meta["name"], meta["content_type"],
                                        base64.b64encode(b"".join(data[aid])).decode())
        else:
            text = b"".join(data[aid]).decode("utf-8", "replace")
            parts[aid] = AttachmentPart("text", aid, meta["name"], meta["content_type"], text[:TEXT_CHARS])
        sent.append(ref(meta, sent_as=parts[aid].kind))
    return parts


def with_parts(message: ChatMessage, metas: list[dict[str, Any]] | None,
               parts: dict[str, AttachmentPart]) -> ChatMessage:
    if not metas:
        return message
    found = tuple(parts[m["id"]] for m in metas if m["id"] in parts)
    return ChatMessage(role=message.role, content=message.content, attachments=found)


async def answer_files(session: AsyncSession, metas: list[dict[str, Any]], *, vision: bool,
                       report: dict[str, Any]) -> ChatMessage:
    """The files of an answer to ask_user (its tool result names them), as a user message."""
    files = report.setdefault("attachments", {})
    parts = await load_parts(session, metas, vision=vision, report=files)
    return with_parts(ChatMessage(role="user", content=None), metas, parts)


def stored_request(request: dict[str, Any], conversation: list[ChatMessage]) -> dict[str, Any]:
    """The provider's request as the trace keeps it: each image's base64 replaced by
    `attachment:<id>` (wherever the provider put it), so the trace holds references only."""
    images = {p.data: p.attachment_id for m in conversation for p in m.images}
    if not images:
        return request

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str) and len(value) > 64:
            payload = value.partition("base64,")[2] if value.startswith("data:") else value
            if payload in images:
                return f"attachment:{images[payload]}"
        return value

    return walk(request)


def _uuid(value: str) -> uuid.UUID:
    return uuid.UUID(value)
