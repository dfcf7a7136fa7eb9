"""connections: a kind, `http` (Heddle's signed-HTTP tool calls, the default) or `mcp` (a Model
Context Protocol server over Streamable HTTP, its URL in base_url)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 04:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=8), server_default="http", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        batch.drop_column("kind")
