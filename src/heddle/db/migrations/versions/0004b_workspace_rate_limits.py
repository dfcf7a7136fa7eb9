"""workspaces.rate_limit_per_key / rate_limit_per_subject: a workspace's own rate-limit rules

Revision ID: 0004b
Revises: 0005
Create Date: 2026-11-23 19:15:00
"""
import sqlalchemy as sa
from alembic import op

revision = '0004b'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('workspaces') as batch:
        batch.add_column(sa.Column('rate_limit_per_key', sa.String(length=200), nullable=True))
        batch.add_column(sa.Column('rate_limit_per_subject', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('workspaces') as batch:
        batch.drop_column('rate_limit_per_subject')
        batch.drop_column('rate_limit_per_key')
