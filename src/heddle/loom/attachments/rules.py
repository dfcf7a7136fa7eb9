"""What a posted message's `attachments` must satisfy, checked in the message's transaction:
each id the caller's, of this thread, unused (loom/attachments/store.py `claim_for_message`),
at most `per_message`, and no image unless the agent's model class takes images (422
`model_cannot_see_images`, naming the class: never silently dropped)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from heddle import process_services
from heddle.auth.context import AuthContext
from heddle.errors import HeddleError
from heddle.loom.attachments.sniff import IMAGE_TYPES
from heddle.loom.attachments.store import claim_for_message
from heddle.loom.deps import model_registry


@dataclass(frozen=True)
class AttachmentRules:
    ids: list[str] = field(default_factory=list)
    per_message: int = 10
    sees_images: Callable[[str], bool] = lambda model_class: False  # model class name -> vision


def images_refused(files: list[dict[str, Any]], model_class: str, sees_images: bool) -> HeddleError | None:
    """The refusal for images sent to a model class that cannot see them (pure)."""
    images = [f["name"] for f in files if f["content_type"] in IMAGE_TYPES]
    if not images or sees_images:
        return None
    return HeddleError("model_cannot_see_images", f"The agent's model class {model_class!r} does not take images "
                       f"({', '.join(images)}); send them to an agent whose class has `vision: true`.",
                       details={"model_class": model_class, "images": images})


async def attach_to_message(session: AsyncSession, auth: AuthContext, thread, agent, message_id: uuid.UUID,
                            rules: AttachmentRules | None) -> list[dict[str, Any]] | None:
    """The message's attachments' metadata (None without any), claimed for `message_id`."""
    if rules is None or not rules.ids:
        return None
    files = await claim_for_message(session, auth, thread, rules.ids, message_id, per_message=rules.per_message)
    refusal = images_refused(files, agent.model_class, rules.sees_images(agent.model_class))
    if refusal is not None:
        raise refusal
    return files


def attachment_rules(request: Request, ids: list[str]) -> AttachmentRules | None:
    """The rules of this server for a posted message's `ids` (None when it names none)."""
    if not ids:
        return None
    registry = model_registry(request)

    def sees_images(name: str) -> bool:
        return name in registry and registry.get(name).vision

    return AttachmentRules(ids, process_services.settings(request).attachments_per_message, sees_images)
