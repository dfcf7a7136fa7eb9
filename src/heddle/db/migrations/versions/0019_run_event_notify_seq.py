"""run events on the PostgreSQL event bus carry their `seq`, so API-side SSE streams are fed
from the notification and read the log only on a gap or a resume (issue 48)

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 15:00:00

Migration 0010's trigger sends each stored `run_events` row as `{"c": channel, "e": event,
"d": data}`; this adds `"s"`, the row's `seq` (a packed row of streamed pieces: its last
piece's). A process's SSE streams of the run then send what the bus brings when it follows
their cursor without a gap (heddle/loom/sse.py), with no read of the run or its log. Listeners
that do not know `"s"` ignore it. The rest of the function (parts for big payloads, realtime
off sends nothing) is 0010's, taken from that migration so the two cannot drift.
"""
import importlib.util
from pathlib import Path

from alembic import op
from sqlalchemy.util import await_only

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def _function_of_0010() -> str:
    spec = importlib.util.spec_from_file_location("heddle_migration_0010",
                                                  Path(__file__).with_name("0010_run_event_notify.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = module.NOTIFY_TRIGGER.split("CREATE TRIGGER")[0]
    return function.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


PAYLOAD_0010 = "'d', NEW.data)"
PAYLOAD_0019 = "'d', NEW.data, 's', NEW.seq)"


def _run_script(sql: str) -> None:
    # plpgsql bodies: run unprepared on asyncpg's own connection (as migration 0010 does).
    await_only(op.get_bind().connection.driver_connection.execute(sql))


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    function = _function_of_0010()
    assert PAYLOAD_0010 in function
    _run_script(function.replace(PAYLOAD_0010, PAYLOAD_0019, 1))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _run_script(_function_of_0010())
