"""Import every domain's models so that `Base.metadata` is complete (Alembic, tests)."""

from heddle.billing.models import LedgerEntry  # noqa: F401
from heddle.db.base import Base  # noqa: F401
from heddle.idempotency.models import IdempotencyRecord  # noqa: F401
from heddle.identify.models import DirectoryEntry  # noqa: F401
from heddle.loom.models import Agent, AgentVersion, Message, QueuedMessage, Run, RunEvent, Thread, ToolCall, Turn  # noqa: F401
from heddle.observability.models import RequestLogEntry  # noqa: F401
from heddle.operators.models import Operator, OperatorLoginToken, OperatorSession  # noqa: F401
from heddle.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint  # noqa: F401
from heddle.workspaces.models import ApiKey, Connection, Workspace  # noqa: F401
