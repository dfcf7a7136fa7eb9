"""turns: `status` (ok | truncated | failed) and `attempts` (every HTTP attempt of the model call);
runs: `traceparent`, the W3C trace context of the request that created the run, so the process
that executes it (a worker) joins that trace

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 05:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("status", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("attempts", sa.JSON(), nullable=True))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("traceparent", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("traceparent")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("attempts")
        batch.drop_column("status")
