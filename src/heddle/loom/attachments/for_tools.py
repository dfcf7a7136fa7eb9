"""Attachments handed to hosted tools: a parameter whose JSON Schema says
`"format": "heddle-attachment"` takes an attachment id from the model; the host receives, in
its place, the file's metadata and a short-lived signed URL to fetch the bytes
(`GET /v1/loom/attachments/{id}/content?expires=…&signature=…`), never the bytes inline. The
signature is the calls' own HMAC under the workspace request secret, over
`<expires>.GET.<path>.`; `heddle.toolhost.verify_attachment_url` checks it. Only attachments of
the run's own thread are handed out; another id fails the call (`attachment_not_found`).
"""

from __future__ import annotations

import datetime as dt
import hmac
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.errors import HeddleError
from heddle.loom import queries as q
from heddle.loom.attachments.store import attachment_dict
from heddle.loom.models import Attachment, Run
from heddle.timeutil import iso
from heddle.toolhost import attachment_url_signature
from heddle.workspaces.models import Workspace

FORMAT = "heddle-attachment"


class AttachmentNotFound(LookupError):
    pass


def attachment_fields(schema: dict[str, Any]) -> dict[str, bool]:
    """Top-level parameters taking attachments: name -> whether it is an array of them."""
    out: dict[str, bool] = {}
    for name, prop in ((schema or {}).get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        if prop.get("format") == FORMAT:
            out[name] = False
        elif (prop.get("type") == "array" and isinstance(prop.get("items"), dict)
              and prop["items"].get("format") == FORMAT):
            out[name] = True
    return out


def content_path(attachment_id: str) -> str:
    return f"/v1/loom/attachments/{attachment_id}/content"


def signed_url(base_url: str, secret: str, attachment_id: str, expires: int) -> str:
    path = content_path(attachment_id)
    return f"{base_url.rstrip('/')}{path}?expires={expires}&signature={attachment_url_signature(secret, path, expires)}"


async def replace_attachments(session: AsyncSession, run: Run, schema: dict[str, Any], args: dict[str, Any],
                              hand: Callable[[Attachment], Awaitable[Any]]) -> dict[str, Any]:
    """`args` with each attachment id (a parameter marked `heddle-attachment`) replaced by what
    `hand` makes of its row; only the run's own thread's attachments, else AttachmentNotFound."""
    fields = {k: many for k, many in attachment_fields(schema).items() if k in args}
    if not fields:
        return args
    ids = [v for k, many in fields.items() for v in (args[k] if many and isinstance(args[k], list) else [args[k]])]
    try:
        parsed = [uuid.UUID(str(i)) for i in ids]
    except ValueError:
        raise AttachmentNotFound(f"{ids!r} are not attachment ids") from None
    rows = {str(a.id): a for a in await session.scalars(select(Attachment).where(
        Attachment.id.in_(parsed), Attachment.thread_id == run.thread_id, Attachment.workspace_id == run.workspace_id))}

    async def handed(value: Any) -> Any:
        row = rows.get(str(value).lower())
        if row is None:
            raise AttachmentNotFound(f"no attachment {value!r} in this thread")
        return await hand(row)

    out = dict(args)
    for name, many in fields.items():
        out[name] = ([await handed(v) for v in args[name]] if many and isinstance(args[name], list)
                     else await handed(args[name]))
    return out


async def with_signed_urls(session: AsyncSession, run: Run, schema: dict[str, Any], args: dict[str, Any], *,
                           secret: str, base_url: str, ttl: float) -> dict[str, Any]:
    """`args` with each attachment id replaced by its metadata and a signed URL."""
    expires = int(time.time() + ttl)

    async def hand(row: Attachment) -> dict[str, Any]:
        return {**attachment_dict(row), "url": signed_url(base_url, secret, str(row.id), expires),
                "url_expires_at": iso_from(expires)}

    return await replace_attachments(session, run, schema, args, hand)


def iso_from(epoch: int) -> str:
    return iso(dt.datetime.fromtimestamp(epoch, tz=dt.UTC))


async def signed_attachment(session: AsyncSession, attachment_id: str, path: str, expires: int | None,
                            signature: str | None) -> Attachment:
    """The attachment a signed URL names, when its signature (under its workspace's request
    secret) holds and it has not expired; 403 `forbidden` otherwise, 404 for no such file."""
    row = await session.get(Attachment, q.parse_id(attachment_id, "attachment"))
    if row is None:
        raise q.not_found("attachment")
    secret = await session.scalar(select(Workspace.request_secret).where(Workspace.id == row.workspace_id))
    if expires is None or signature is None or not secret:
        raise HeddleError("forbidden", "A signed attachment URL needs both `expires` and `signature`.")
    if expires < time.time():
        raise HeddleError("forbidden", "The signed attachment URL has expired.")
    if not hmac.compare_digest(attachment_url_signature(secret, path, expires), signature.lower()):
        raise HeddleError("forbidden", "The attachment URL's signature does not match.")
    return row
