"""run control: queued messages, run control notes, tool-call approvals, workspace retention

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 19:00:00
"""
import sqlalchemy as sa
from alembic import op

from heddle.db.base import UTCDateTime

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('control', sa.JSON(), nullable=True))
    with op.batch_alter_table('tool_calls') as batch:
        batch.add_column(sa.Column('approval', sa.JSON(), nullable=True))
    with op.batch_alter_table('workspaces') as batch:
        batch.add_column(sa.Column('retention_days', sa.Integer(), nullable=True))
    op.create_table(
        'queued_messages',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('thread_id', sa.Uuid(), nullable=False),
        sa.Column('run_id', sa.Uuid(), nullable=False),
        sa.Column('message_id', sa.Uuid(), nullable=False),
        sa.Column('content', sa.Text(), nullable=False),
        sa.Column('created_at', UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id']),
        sa.ForeignKeyConstraint(['thread_id'], ['threads.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id'),
    )
    op.create_index('ix_queued_messages_thread_id_id', 'queued_messages', ['thread_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_queued_messages_thread_id_id', table_name='queued_messages')
    op.drop_table('queued_messages')
    with op.batch_alter_table('workspaces') as batch:
        batch.drop_column('retention_days')
    with op.batch_alter_table('tool_calls') as batch:
        batch.drop_column('approval')
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('control')
