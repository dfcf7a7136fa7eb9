"""The engine's statements, built once: a run step reads and writes in as few round trips as it can.

A scripted run is a handful of statements, so each one counts (bench/engine_statements.py):
one joined read gives a step its run, agent, balance and realtime flag; an assistant message
takes its thread position in the INSERT itself; the run's counters and transitions ride on the
fencing UPDATE (heddle/loom/lease.py). Durability is unchanged: every step still commits.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.db.base import utcnow
from heddle.loom.models import AgentVersion, Message, Run, ToolCall
from heddle.loom.rows import next_seq_of
from heddle.workspaces.models import Workspace

_messages = Message.__table__

# The agent as the run recorded it (`runs.agent_version`): an edit made while a run is under
# way does not change what that run executes.
STEP_READ = (
    select(Run, AgentVersion, Workspace.balance_micro, Workspace.realtime_enabled)
    .join(AgentVersion, (AgentVersion.agent_id == Run.agent_id) & (AgentVersion.version == Run.agent_version))
    .join(Workspace, Workspace.id == Run.workspace_id)
    .where(Run.id == bindparam("rid", type_=Run.id.type))
)

# What names a run's span, read only when tracing is on: the agent and the caller's trace.
RUN_SPAN_READ = (
    select(AgentVersion.name, Run.agent_id, Run.traceparent)
    .join(AgentVersion, (AgentVersion.agent_id == Run.agent_id) & (AgentVersion.version == Run.agent_version))
    .where(Run.id == bindparam("rid", type_=Run.id.type))
)

RUN_TOOL_CALLS = (select(ToolCall).where(ToolCall.run_id == bindparam("rid", type_=ToolCall.run_id.type))
                  .order_by(ToolCall.seq))

_NEXT_SEQ = next_seq_of(bindparam("m_thread", type_=_messages.c.thread_id.type))
_INSERT_ASSISTANT = insert(_messages).values(
    id=bindparam("m_id", type_=_messages.c.id.type), thread_id=bindparam("m_thread", type_=_messages.c.thread_id.type),
    run_id=bindparam("m_run", type_=_messages.c.run_id.type), seq=_NEXT_SEQ, role="assistant",
    content=bindparam("m_content", type_=_messages.c.content.type),
    data=bindparam("m_data", type_=_messages.c.data.type),
    created_at=bindparam("m_created", type_=_messages.c.created_at.type),
).returning(_messages.c.seq)


async def add_assistant_message(session: AsyncSession, run: Run, content: str,
                                message_id: uuid.UUID | None = None, data: Any = None) -> Message:
    """Append the run's answer (or question) to its thread in one statement; the new Message."""
    now = utcnow()
    message_id = message_id or uuid.uuid4()
    seq = (await session.execute(_INSERT_ASSISTANT, {
        "m_id": message_id, "m_thread": run.thread_id, "m_run": run.id, "m_content": content, "m_created": now,
        "m_data": data,  # a structured reply's object (loom/structured_output.py)
    })).scalar_one()
    return Message(id=message_id, thread_id=run.thread_id, run_id=run.id, seq=seq, role="assistant",
                   content=content, data=data, created_at=now)

