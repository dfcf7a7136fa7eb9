"""Attachment rows: metadata in `attachments`, the bytes in `attachment_chunks` (CHUNK_BYTES
each), in the database on SQLite and PostgreSQL alike, so any API process or worker reads them.

Writes happen in the caller's transaction (an upload's, a message's, an erasure's): a failure
leaves nothing. Reads of the bytes go chunk by chunk, so neither a download nor a model turn
holds more than one chunk per attachment in memory beyond what it sends.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import IO, Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.db.base import Database, utcnow
from heddle.errors import HeddleError
from heddle.loom import queries as q
from heddle.loom.attachments.sniff import Verdict
from heddle.loom.models import Attachment, AttachmentChunk, Thread
from heddle.timeutil import iso

CHUNK_BYTES = 256 * 1024
SHOWN_INFO = ("width", "height", "pages", "text_layer", "text_chars")  # of what inspecting found
_INSERT_CHUNK = insert(AttachmentChunk.__table__)


def attachment_dict(a: Attachment) -> dict[str, Any]:
    """The metadata the API shows (an attachment, and each entry of a message's `attachments`)."""
    return {"id": str(a.id), "name": a.name, "content_type": a.content_type, "size": a.size, "sha256": a.sha256,
            **{k: v for k, v in (a.info or {}).items() if k in SHOWN_INFO},
            "created_at": iso(a.created_at)}


async def check_quota(session: AsyncSession, thread: Thread, size: int, *, thread_cap: int,
                      workspace_cap: int) -> None:
    """413 `attachment_quota_exceeded` when `size` more bytes would pass a cap (0 = none)."""
    for cap, where, what in ((thread_cap, Attachment.thread_id == thread.id, "thread"),
                             (workspace_cap, Attachment.workspace_id == thread.workspace_id, "workspace")):
        if not cap:
            continue
        used = int(await session.scalar(select(func.coalesce(func.sum(Attachment.size), 0)).where(where)) or 0)
        if used + size > cap:
            raise HeddleError("attachment_quota_exceeded", f"The {what}'s attachments hold {used} bytes; "
                              f"{size} more would pass its cap of {cap}.",
                              details={"scope": what, "used_bytes": used, "max_bytes": cap})


async def insert_attachment(session: AsyncSession, thread: Thread, subject: str, name: str, verdict: Verdict,
                            file: IO[bytes], size: int, sha256: str) -> Attachment:
    """The attachment row and its chunks, read from `file` one chunk at a time."""
    row = Attachment(id=uuid.uuid4(), workspace_id=thread.workspace_id, thread_id=thread.id, subject=subject,
                     name=name, content_type=verdict.content_type, size=size, sha256=sha256, info=verdict.info,
                     text=verdict.text, created_at=utcnow())
    session.add(row)
    await session.flush()
    file.seek(0)
    seq = 0
    while chunk := file.read(CHUNK_BYTES):
        await session.execute(_INSERT_CHUNK, {"attachment_id": row.id, "seq": seq, "data": chunk})
        seq += 1
    return row


async def visible_attachment(session: AsyncSession, auth: AuthContext, attachment_id: str) -> Attachment:
    """The attachment if it belongs to the caller's workspace and subject; 404 otherwise."""
    aid = q.parse_id(attachment_id, "attachment")
    row = await session.get(Attachment, aid)
    if row is None or row.workspace_id != auth.workspace_id or row.subject != auth.require_subject():
        raise q.not_found("attachment")
    return row


async def workspace_attachment(session: AsyncSession, workspace_id: str, attachment_id: str) -> Attachment:
    """The attachment if it is in this workspace (an operator's read, any subject); 404 otherwise."""
    aid = q.parse_id(attachment_id, "attachment")
    row = await session.get(Attachment, aid)
    if row is None or str(row.workspace_id) != str(workspace_id):
        raise q.not_found("attachment")
    return row


async def claim_for_message(session: AsyncSession, auth: AuthContext, thread: Thread, ids: list[str],
                            message_id: uuid.UUID, *, per_message: int) -> list[dict[str, Any]]:
    """Mark the attachments as the message's (in the message's transaction) and return their
    metadata, in the order given. Each must be the caller's, of this thread, and unused."""
    if not ids:
        return []
    if len(ids) > per_message or len(set(ids)) != len(ids):
        raise HeddleError("too_many_attachments", f"A message takes at most {per_message} attachments, each "
                          "once.", details={"max": per_message})
    parsed = [q.parse_id(i, "attachment") for i in ids]
    rows = {a.id: a for a in await session.scalars(select(Attachment).where(
        Attachment.id.in_(parsed), Attachment.workspace_id == auth.workspace_id,
        Attachment.subject == auth.subject, Attachment.thread_id == thread.id))}
    for aid in parsed:
        if aid not in rows:
            raise HeddleError("not_found", f"No attachment {aid} of this thread is visible to this caller.",
                              details={"attachment_id": str(aid)})
        if rows[aid].message_id is not None:
            raise HeddleError("attachment_in_use", f"Attachment {aid} already belongs to message "
                              f"{rows[aid].message_id}.", details={"attachment_id": str(aid)})
    # Conditional on still being unused: of two messages racing for one file, one wins.
    claimed = (await session.execute(update(Attachment).where(
        Attachment.id.in_(parsed), Attachment.message_id.is_(None)).values(message_id=message_id)
        .execution_options(synchronize_session=False))).rowcount
    if claimed != len(parsed):
        raise HeddleError("attachment_in_use", "An attachment was taken by another message meanwhile.")
    return [attachment_dict(rows[aid]) for aid in parsed]


async def chunks(db: Database, attachment_id: uuid.UUID) -> AsyncIterator[bytes]:
    """The bytes, one chunk per short read session (a slow reader holds no connection)."""
    seq = 0
    while True:
        async with db.session() as session:
            data = await session.scalar(select(AttachmentChunk.data).where(
                AttachmentChunk.attachment_id == attachment_id, AttachmentChunk.seq == seq))
        if data is None:
            return
        yield bytes(data)
        seq += 1


async def read_bytes(session: AsyncSession, attachment_id: uuid.UUID) -> bytes:
    """All the bytes at once (a model turn's image; capped by HEDDLE_ATTACHMENT_MAX_BYTES)."""
    parts = await session.scalars(select(AttachmentChunk.data).where(AttachmentChunk.attachment_id == attachment_id)
                                  .order_by(AttachmentChunk.seq))
    return b"".join(bytes(p) for p in parts)


async def erase_for_threads(session: AsyncSession, thread_ids: list[uuid.UUID]) -> int:
    """Delete the threads' attachments and their bytes (loom/erasure.py); how many."""
    ids = select(Attachment.id).where(Attachment.thread_id.in_(thread_ids))
    await session.execute(delete(AttachmentChunk).where(AttachmentChunk.attachment_id.in_(ids))
                          .execution_options(synchronize_session=False))
    return (await session.execute(delete(Attachment).where(Attachment.thread_id.in_(thread_ids))
                                  .execution_options(synchronize_session=False))).rowcount
