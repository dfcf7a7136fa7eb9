"""The body Heddle POSTs to a workspace's webhook URL (published under `webhooks` in OpenAPI)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from heddle.api.envelope import ReadModel, Timestamp
from heddle.loom.schemas import RUN_EXAMPLE, Run

WEBHOOK_TYPES = ("run.closed", "run.failed", "run.awaiting_input", "run.awaiting_outcome")


class WebhookEvent(ReadModel):
    """Signed with `Service-Signature` (as tool calls are, under the webhook secret); the same
    `id` on every retry."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": "evt_5f1c0b7e2a9d4c3b8a716e2f", "type": "run.closed", "created_at": "2026-01-01T12:00:02Z",
        "data": {**RUN_EXAMPLE, "state": "closed", "terminal": True, "pending": None}}]})
    id: str = Field(description="`evt_…`, the same on every delivery attempt.")
    type: Literal["run.closed", "run.failed", "run.awaiting_input", "run.awaiting_outcome"]
    created_at: Timestamp
    data: Run
