"""procrastinate's job-queue schema and the run-enqueue triggers, on PostgreSQL only (HEDDLE_EXECUTOR=queue)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 19:00:00

The schema is procrastinate's own `schema.sql` from the installed library, applied as one
script; upgrading procrastinate later means applying its migrations (docs/operations.md).
SQLite has no job queue: nothing to do there.

The triggers enqueue a run's job in the transaction that inserts the run `running` or moves it
into `running`, for connections of queue-mode processes only (heddle/queue/enqueue.py).
"""
from alembic import op
from sqlalchemy.util import await_only

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

PROCRASTINATE_TABLES = ("procrastinate_periodic_defers", "procrastinate_events", "procrastinate_jobs",
                        "procrastinate_workers", "procrastinate_version")


ENQUEUE_TRIGGERS = """
CREATE FUNCTION heddle_enqueue_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Only connections of queue-mode processes (`SET heddle.executor = 'queue'` at connect).
    IF current_setting('heddle.executor', true) = 'queue' THEN
        PERFORM procrastinate_defer_jobs_v1(ARRAY[ROW(
            'heddle_runs', 'heddle.execute_run', 0, NEW.id::text, NULL,
            jsonb_build_object('run_id', NEW.id::text, 'enqueued_at', extract(epoch FROM clock_timestamp())),
            NULL)::procrastinate_job_to_defer_v1]);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER heddle_runs_enqueue_created AFTER INSERT ON runs
    FOR EACH ROW WHEN (NEW.state = 'running') EXECUTE FUNCTION heddle_enqueue_run();
CREATE TRIGGER heddle_runs_enqueue_resumed AFTER UPDATE OF state ON runs
    FOR EACH ROW WHEN (NEW.state = 'running' AND OLD.state <> 'running') EXECUTE FUNCTION heddle_enqueue_run();
"""


def _run_script(sql: str) -> None:
    # The script holds many statements and plpgsql bodies; asyncpg runs such a script only
    # unprepared, on its own connection object (SQLAlchemy's cursor always prepares).
    await_only(op.get_bind().connection.driver_connection.execute(sql))


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    from procrastinate.schema import SchemaManager

    _run_script(SchemaManager.get_schema())
    _run_script(ENQUEUE_TRIGGERS)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _run_script("""
        DROP TRIGGER IF EXISTS heddle_runs_enqueue_created ON runs;
        DROP TRIGGER IF EXISTS heddle_runs_enqueue_resumed ON runs;
        DROP FUNCTION IF EXISTS heddle_enqueue_run();
        DO $$
        DECLARE r record;
        BEGIN
            FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p
                     JOIN pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate\\_%' LOOP
                EXECUTE 'DROP FUNCTION IF EXISTS ' || r.f || ' CASCADE';
            END LOOP;
        END $$;
    """ + "".join(f"DROP TABLE IF EXISTS {t} CASCADE;" for t in PROCRASTINATE_TABLES) + """
        DROP TYPE IF EXISTS procrastinate_job_status, procrastinate_job_event_type,
            procrastinate_job_to_defer_v1 CASCADE;
    """)
