"""idempotency_keys (the first response of each Idempotency-Key, per workspace, for 24 hours);
workspaces.rate_limit_per_key / rate_limit_per_subject (a workspace's own rate-limit rules)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 19:00:00
"""
import sqlalchemy as sa
from alembic import op

import heddle.db.base

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'idempotency_keys',
        sa.Column('workspace_id', sa.String(length=40), nullable=False),
        sa.Column('key', sa.String(length=255), nullable=False),
        sa.Column('fingerprint', sa.String(length=64), nullable=False),
        sa.Column('status_code', sa.Integer(), nullable=True),
        sa.Column('body', sa.Text(), nullable=True),
        sa.Column('created_at', heddle.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'],
                                name=op.f('fk_idempotency_keys_workspace_id_workspaces')),
        sa.PrimaryKeyConstraint('workspace_id', 'key', name=op.f('pk_idempotency_keys')),
    )
    op.create_index('ix_idempotency_keys_created_at', 'idempotency_keys', ['created_at'], unique=False)
    with op.batch_alter_table('workspaces') as batch:
        batch.add_column(sa.Column('rate_limit_per_key', sa.String(length=200), nullable=True))
        batch.add_column(sa.Column('rate_limit_per_subject', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('workspaces') as batch:
        batch.drop_column('rate_limit_per_subject')
        batch.drop_column('rate_limit_per_key')
    op.drop_index('ix_idempotency_keys_created_at', table_name='idempotency_keys')
    op.drop_table('idempotency_keys')
