"""messages: index (run_id, seq), so rendering a run does not scan every message

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 01:00:00
"""
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_messages_run_id_seq', 'messages', ['run_id', 'seq'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_messages_run_id_seq', table_name='messages')
