"""runs: `client_tools`, the caller's own front-end tools offered for the run (AG-UI `tools`),
whose calls the run waits on until the caller answers them; agents: `a2a`, the agent file's
`a2a: {publish, description}` (published over A2A when publish is true) (issue 47)

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 15:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("client_tools", sa.JSON(), nullable=True))
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("a2a", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("a2a")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("client_tools")
