"""schedules and structured replies (issue 45): messages posted to a thread later, once or on a
cron (`messages.scheduled` and `queued_messages.scheduled` mark what a schedule posted); an agent's
`output_schema` (agents, agent_versions) and a structured reply's `messages.data`

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 15:00:00
"""

import sqlalchemy as sa
from alembic import op

from heddle.db.base import UTCDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("thread_id", sa.Uuid(), nullable=False),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("cron", sa.String(length=120), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("ends_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("max_runs", sa.Integer(), nullable=True),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("paused_reason", sa.String(length=32), nullable=True),
        sa.Column("next_run_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.String(length=16), nullable=False),
        sa.Column("created_by_run_id", sa.Uuid(), nullable=True),
        sa.Column("auth_mode", sa.String(length=8), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=True),
        sa.Column("connection_id", sa.Uuid(), nullable=True),
        sa.Column("last_run_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_run_id", sa.Uuid(), nullable=True),
        sa.Column("last_late_seconds", sa.Float(), nullable=True),
        sa.Column("last_error", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name=op.f("fk_schedules_workspace_id_workspaces")),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], name=op.f("fk_schedules_thread_id_threads")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedules")),
    )
    op.create_index("ix_schedules_due", "schedules", ["state", "next_run_at"])
    op.create_index("ix_schedules_thread", "schedules", ["thread_id", "created_at"])
    op.create_index("ix_schedules_workspace_created", "schedules", ["workspace_id", "created_at"])
    op.create_index("ix_schedules_workspace_subject", "schedules", ["workspace_id", "subject"])
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("scheduled", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("data", sa.JSON(), nullable=True))
    with op.batch_alter_table("queued_messages") as batch:
        batch.add_column(sa.Column("scheduled", sa.JSON(), nullable=True))
    for table in ("agents", "agent_versions"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("output_schema", sa.JSON(), nullable=True))


def downgrade() -> None:
    for table in ("agents", "agent_versions"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("output_schema")
    with op.batch_alter_table("queued_messages") as batch:
        batch.drop_column("scheduled")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("data")
        batch.drop_column("scheduled")
    op.drop_table("schedules")
