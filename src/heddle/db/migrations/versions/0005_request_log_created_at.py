"""request_log: index created_at, so retention pruning finds old rows without a scan

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 19:00:00
"""
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_request_log_created_at', 'request_log', ['created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_request_log_created_at', table_name='request_log')
