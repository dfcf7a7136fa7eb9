"""procrastinate's job-queue schema, on PostgreSQL only (HEDDLE_EXECUTOR=queue)

Revision ID: 0008
Revises: 0003
Create Date: 2026-11-23 19:00:00

The schema is procrastinate's own `schema.sql` from the installed library, applied as one
script; upgrading procrastinate later means applying its migrations (docs/operations.md).
SQLite has no job queue: nothing to do there.
"""
from alembic import op
from sqlalchemy.util import await_only

revision = '0008'
down_revision = '0003'  # '0002' on its own; chained after scale-core's fence (0003) once merged
branch_labels = None
depends_on = None

PROCRASTINATE_TABLES = ("procrastinate_periodic_defers", "procrastinate_events", "procrastinate_jobs",
                        "procrastinate_workers", "procrastinate_version")


def _run_script(sql: str) -> None:
    # The script holds many statements and plpgsql bodies; asyncpg runs such a script only
    # unprepared, on its own connection object (SQLAlchemy's cursor always prepares).
    await_only(op.get_bind().connection.driver_connection.execute(sql))


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    from procrastinate.schema import SchemaManager

    _run_script(SchemaManager.get_schema())


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _run_script("""
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
