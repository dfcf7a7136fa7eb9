"""attachments: files uploaded to a thread (metadata and 256 KiB chunks in the database), and
`attachments` (their metadata) on messages and queued messages

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 15:00:00
"""

import sqlalchemy as sa
from alembic import op

from heddle.db.base import UTCDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attachments",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("workspace_id", sa.String(length=40), sa.ForeignKey("workspaces.id"), nullable=False),
        sa.Column("thread_id", sa.Uuid(), sa.ForeignKey("threads.id"), nullable=False),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("message_id", sa.Uuid(), nullable=True),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("content_type", sa.String(length=100), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_attachments_thread_id", "attachments", ["thread_id"])
    op.create_index("ix_attachments_workspace_id", "attachments", ["workspace_id"])
    op.create_table(
        "attachment_chunks",
        sa.Column("attachment_id", sa.Uuid(), sa.ForeignKey("attachments.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("attachments", sa.JSON(), nullable=True))
    with op.batch_alter_table("queued_messages") as batch:
        batch.add_column(sa.Column("attachments", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("queued_messages") as batch:
        batch.drop_column("attachments")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("attachments")
    op.drop_table("attachment_chunks")
    op.drop_index("ix_attachments_workspace_id", "attachments")
    op.drop_index("ix_attachments_thread_id", "attachments")
    op.drop_table("attachments")
