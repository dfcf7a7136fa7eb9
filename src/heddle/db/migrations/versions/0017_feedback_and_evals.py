"""message_feedback (end users' ratings of assistant messages) and eval_runs / eval_cases (stored
eval results), issue 46

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 15:00:00
"""

import sqlalchemy as sa
from alembic import op

from heddle.db.base import UTCDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "message_feedback",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("workspace_id", sa.String(length=40), sa.ForeignKey("workspaces.id"), nullable=False),
        sa.Column("message_id", sa.Uuid(), sa.ForeignKey("messages.id"), nullable=False),
        sa.Column("thread_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("agent_id", sa.String(length=40), nullable=False),
        sa.Column("agent_version", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("rating", sa.String(length=8), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("message_id", "subject"),
    )
    op.create_index("ix_message_feedback_workspace_updated", "message_feedback", ["workspace_id", "updated_at"])
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("workspace_id", sa.String(length=40), sa.ForeignKey("workspaces.id"), nullable=False),
        sa.Column("agent_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("baseline_version", sa.Integer(), nullable=True),
        sa.Column("dataset", sa.String(length=300), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("regressions", sa.JSON(), nullable=False),
        sa.Column("cases", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_eval_runs_workspace_created", "eval_runs", ["workspace_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_eval_runs_workspace_created", table_name="eval_runs")
    op.drop_table("eval_runs")
    op.drop_index("ix_message_feedback_workspace_updated", table_name="message_feedback")
    op.drop_table("message_feedback")
