"""runs: `origin`, what started the run (`api` for a posted message; `schedule`, `playground`,
`eval`, `agui`, `a2a` for the other ways in), shown in the run and its trace

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 14:45:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("origin", sa.String(length=16), nullable=False, server_default="api"))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("origin")
