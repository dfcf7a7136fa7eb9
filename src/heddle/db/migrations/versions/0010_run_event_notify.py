"""run events announced on the PostgreSQL event bus by the transaction that stores them

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 01:10:00

With `HEDDLE_EVENT_BUS=postgres`, every process's connections carry the bus channel as the
session parameter `heddle.event_bus_channel` (heddle/realtime/bus.py `database_settings`). A
row stored in `run_events` (a run's `run.updated`, `message.created`, or its streamed pieces,
one row per batch) is then sent on that channel by this trigger: a NOTIFY in the transaction
that writes the row, delivered at its commit and in commit order, at no commit of its own.
Before, each event (each streamed piece) was a `pg_notify` transaction of its own.

The payload is the bus's event format (`{"c": channel, "e": event, "d": data}`); one that
PostgreSQL would refuse (8000 bytes or more) goes in numbered parts of the same transaction,
which the listener joins (the format BusPublisher uses for large events). A workspace with
realtime off gets nothing. Connections without the parameter (SQLite has no trigger at all;
CLI commands, a deployment on the memory or Redis bus) send nothing.
"""
from alembic import op
from sqlalchemy.util import await_only

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

NOTIFY_TRIGGER = """
CREATE FUNCTION heddle_notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    channel text := current_setting('heddle.event_bus_channel', true);
    thread uuid;
    realtime boolean;
    payload text;
    parts int;
    tag text;
BEGIN
    IF channel IS NULL OR channel = '' THEN
        RETURN NULL;
    END IF;
    SELECT r.thread_id, w.realtime_enabled INTO thread, realtime
        FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE r.id = NEW.run_id;
    IF NOT FOUND OR realtime IS NOT TRUE THEN
        RETURN NULL;
    END IF;
    payload := json_build_object('c', 'private-thread-' || thread::text, 'e', NEW.event, 'd', NEW.data)::text;
    IF octet_length(payload) < 7900 THEN
        PERFORM pg_notify(channel, payload);
    ELSE
        -- 1900 characters are at most 7600 bytes, whatever the characters.
        parts := (length(payload) + 1899) / 1900;
        tag := substr(md5(random()::text || clock_timestamp()::text), 1, 12);
        FOR i IN 0 .. parts - 1 LOOP
            PERFORM pg_notify(channel, '~' || tag || ':' || i || ':' || parts || ':'
                                       || substr(payload, i * 1900 + 1, 1900));
        END LOOP;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER heddle_run_events_notify AFTER INSERT ON run_events
    FOR EACH ROW EXECUTE FUNCTION heddle_notify_run_event();
"""


def _run_script(sql: str) -> None:
    # plpgsql bodies: run unprepared on asyncpg's own connection (as migration 0006 does).
    await_only(op.get_bind().connection.driver_connection.execute(sql))


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _run_script(NOTIFY_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _run_script("DROP TRIGGER IF EXISTS heddle_run_events_notify ON run_events;"
                "DROP FUNCTION IF EXISTS heddle_notify_run_event();")
