"""The body Heddle POSTs to a workspace's webhook URL (published under `webhooks` in OpenAPI)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from heddle.api.envelope import NullableTimestamp, ReadModel, Timestamp

RUN_WEBHOOK_TYPES = ("run.closed", "run.failed", "run.awaiting_input", "run.awaiting_outcome")
# A fact remembered or forgotten about a subject (heddle/loom/memory.py): `data` is the Memory.
MEMORY_WEBHOOK_TYPES = ("memory.created", "memory.deleted")
# A subject rated an answer or withdrew its rating (heddle/loom/feedback.py): `data` is the Feedback.
WEBHOOK_TYPES = RUN_WEBHOOK_TYPES + ("message.feedback",) + MEMORY_WEBHOOK_TYPES
# Each enum declared once (one named component, as heddle.loom.schemas does for RunState).
WebhookEventType = TypeAliasType("WebhookEventType", Literal[WEBHOOK_TYPES])
DeliveryState = TypeAliasType("DeliveryState", Literal["pending", "delivered", "failed"])


class WebhookEvent(ReadModel):
    """Signed with `Service-Signature` (as tool calls are, under the webhook secret); the same
    `id` on every retry."""

    id: str = Field(description="`evt_…`, the same on every delivery attempt.")
    type: WebhookEventType
    created_at: Timestamp
    # The run as `GET /v1/loom/runs/{run_id}` answers it (a Memory for memory.*). Not typed here: webhooks sit below
    # loom and forward the body loom stored (docs/architecture.md, "Layers and import
    # contracts"); the OpenAPI document points `data` at the Run schema (heddle/openapi.py).
    data: dict[str, Any]


class WebhookAttemptRecord(ReadModel):
    n: int = Field(description="1, 2, 3 … within the delivery.")
    url: str
    started_at: Timestamp
    duration_ms: float
    http_status: int | None = Field(description="The receiver's answer; null when none came.")
    error: str | None = Field(description="Why the attempt failed, e.g. `destination_refused: …`.")


class WebhookDelivery(ReadModel):
    """One webhook owed to the workspace, with every attempt: `failed` at once when the
    destination is refused (a private address, plain http), with the reason in `last_error`."""

    id: str = Field(description="`evt_…`: the event's id, sent on every attempt.")
    type: WebhookEventType
    run_id: str | None = Field(description="The run a run.* event is about (null for memory.*).")
    state: DeliveryState
    attempt_count: int
    next_attempt_at: NullableTimestamp
    last_error: str | None = Field(description="Why the latest attempt failed.")
    created_at: Timestamp
    delivered_at: NullableTimestamp
    attempts: list[WebhookAttemptRecord]
