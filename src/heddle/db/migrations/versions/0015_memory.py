"""memory: thread summaries (what a model was given instead of the messages that no longer fit),
memories (facts an agent keeps about a subject), `agents.memory` / `agent_versions.memory` (the
agent file's `memory:` section) and `turns.purpose` (`summary` for a turn that wrote a summary)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 15:00:00
"""

import sqlalchemy as sa
from alembic import op

import heddle.db.base

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("memory", sa.JSON(), nullable=True))
    with op.batch_alter_table("agent_versions") as batch:
        batch.add_column(sa.Column("memory", sa.JSON(), nullable=True))
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("purpose", sa.String(length=16), nullable=True))
    op.create_table(
        "thread_summaries",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("thread_id", sa.Uuid(), sa.ForeignKey("threads.id"), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), sa.ForeignKey("workspaces.id"), nullable=False),
        sa.Column("through_seq", sa.Integer(), nullable=False),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("model_class", sa.String(length=100), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("turn_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", heddle.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("thread_id", "through_seq", name="uq_thread_summaries_thread_through"),
    )
    op.create_table(
        "memories",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("workspace_id", sa.String(length=40), sa.ForeignKey("workspaces.id"), nullable=False),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("agent_id", sa.String(length=40), nullable=True),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("tool_call_id", sa.Uuid(), nullable=True, unique=True),
        sa.Column("created_at", heddle.db.base.UTCDateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_memories_workspace_subject_created", "memories", ["workspace_id", "subject", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_memories_workspace_subject_created", table_name="memories")
    op.drop_table("memories")
    op.drop_table("thread_summaries")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("purpose")
    with op.batch_alter_table("agent_versions") as batch:
        batch.drop_column("memory")
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("memory")
