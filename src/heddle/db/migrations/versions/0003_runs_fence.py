"""runs: a fencing token, grown on every claim, that every executor write is conditional on

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 19:00:00
"""
import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('fence', sa.BigInteger(), server_default='0', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('fence')
