"""Every table of the database: each domain's models module imported, so that `Base.metadata`
is complete for Alembic (db/migrations/env.py) and the tests.

It sits above every domain that owns a table, so db/ below imports none of them; a domain's
models module imports only heddle.db.base (tests/architecture checks both), so importing this
registry loads the tables and none of the services.
"""

import heddle.billing.models  # noqa: F401
import heddle.idempotency.models  # noqa: F401
import heddle.identify.models  # noqa: F401
import heddle.loom.eval_models  # noqa: F401
import heddle.loom.feedback_models  # noqa: F401
import heddle.loom.memory_models  # noqa: F401
import heddle.loom.models  # noqa: F401
import heddle.observability.models  # noqa: F401
import heddle.operators.models  # noqa: F401
import heddle.webhooks.models  # noqa: F401
import heddle.workspaces.models  # noqa: F401
from heddle.db.base import Base

__all__ = ["Base"]
