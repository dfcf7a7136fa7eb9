"""What an agent remembers about a person: facts kept per workspace and subject (docs/memory.md).

A fact is short text (at most HEDDLE_MEMORY_FACT_MAX_CHARS characters, never empty, no U+0000)
about one subject of one workspace, shared by the workspace's agents whose file says
`memory: {remember: true}`. It is written by the agent's `remember` tool (loom/tools/memory.py),
inside the unit of work that records the call, so the run only ever writes its own subject's
memory and a retried or resumed run stores a fact once; or by the caller (`POST
/v1/loom/memories`, relay). The person sees and deletes their own (`GET`/`DELETE`, direct or
relay). Every change owes a `memory.created` / `memory.deleted` webhook, enqueued in the same
transaction. Erasing a subject erases its facts (loom/erasure.py); a workspace's
`retention_days` erases facts older than that (loom/retention.py).

The model of a run of a remembering agent is given the newest facts first, at most
HEDDLE_MEMORY_PROMPT_MAX_FACTS of them and HEDDLE_MEMORY_PROMPT_MAX_TOKENS estimated tokens,
each with its id (so it can `forget` one); the turn's trace says how many were given, how many
were left out and the caps.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select

from heddle.auth.context import AuthContext
from heddle.config import Settings
from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom.history import estimate_tokens
from heddle.loom.memory_models import Memory
from heddle.loom.providers.base import ChatMessage
from heddle.loom.unit_of_work import RunWork
from heddle.timeutil import iso
from heddle.webhooks import outbox as webhooks

MEMORY_CREATED, MEMORY_DELETED = "memory.created", "memory.deleted"
REMEMBER, FORGET = "remember", "forget"  # the built-in tools (loom/tools/memory.py)


@dataclass(frozen=True)
class Caps:
    """The memory settings (heddle/config.py `memory_*`)."""

    max_facts: int = 100
    fact_max_chars: int = 500
    prompt_max_facts: int = 20
    prompt_max_tokens: int = 800

    @classmethod
    def of(cls, settings: Settings) -> Caps:
        return cls(settings.memory_max_facts, settings.memory_fact_max_chars, settings.memory_prompt_max_facts,
                   settings.memory_prompt_max_tokens)


def remembers(agent: Any) -> bool:
    """Whether the agent (or agent version) has `memory: {remember: true}`."""
    return bool((getattr(agent, "memory", None) or {}).get("remember"))


def tool_entries(agent: Any) -> list[dict[str, Any]]:
    """The tool entries an agent's `memory:` section stands for: `remember` and `forget` when it
    remembers, else none (heddle/loom/tools adds them to the agent file's own)."""
    return [{"builtin": REMEMBER}, {"builtin": FORGET}] if remembers(agent) else []


def fact_problem(content: Any, caps: Caps) -> str | None:
    """Why `content` cannot be a fact, or None."""
    if not isinstance(content, str) or not content.strip():
        return "a fact must be non-empty text"
    if "\x00" in content:
        return "a fact may not contain U+0000"
    if len(content) > caps.fact_max_chars:
        return f"a fact is at most {caps.fact_max_chars} characters (this one has {len(content)})"
    return None


def check_fact(content: Any, caps: Caps) -> str:
    """The fact as stored (surrounding whitespace removed); 400 `invalid_request` naming `content`."""
    problem = fact_problem(content, caps)
    if problem is not None:
        raise HeddleError("invalid_request", f"Invalid request: {problem}.",
                          details=[{"field": "content", "location": "body", "message": problem,
                                    "type": "value_error"}])
    return content.strip()


def memory_dict(m: Memory) -> dict[str, Any]:
    return {"id": str(m.id), "subject": m.subject, "content": m.content, "source": m.source,
            "agent_id": m.agent_id, "run_id": str(m.run_id) if m.run_id else None, "created_at": iso(m.created_at)}


def _of(workspace_id: str, subject: str):
    return (Memory.workspace_id == workspace_id, Memory.subject == subject)


async def count(session, workspace_id: str, subject: str) -> int:
    return int(await session.scalar(select(func.count()).select_from(Memory).where(*_of(workspace_id, subject))) or 0)


async def ensure_room(session, workspace_id: str, subject: str, caps: Caps) -> None:
    """409 `memory_full` when the subject has as many facts as it may keep."""
    if await count(session, workspace_id, subject) >= caps.max_facts:
        raise HeddleError("memory_full", f"This subject already has {caps.max_facts} remembered facts; "
                                         "delete one first.")


async def find(session, workspace_id: str, subject: str, memory_id: Any) -> Memory | None:
    """The subject's fact `memory_id` in the workspace, or None (another subject's or workspace's too)."""
    try:
        fact_id = memory_id if isinstance(memory_id, uuid.UUID) else uuid.UUID(str(memory_id))
    except ValueError:
        return None
    return await session.scalar(select(Memory).where(Memory.id == fact_id, *_of(workspace_id, subject)))


async def _owe_webhook(work: RunWork, workspace_id: str, event: str, data: dict[str, Any]) -> None:
    if await webhooks.has_endpoint(work.session, workspace_id):
        webhooks.enqueue(work.session, workspace_id, event, data)
        work.webhooks_owed = True


async def store(work: RunWork, *, workspace_id: str, subject: str, content: str, source: str,
                fact_id: uuid.UUID | None = None, agent_id: str | None = None, run_id: uuid.UUID | None = None,
                tool_call_id: uuid.UUID | None = None) -> dict[str, Any]:
    """Add a fact in `work` (checked already) and owe its webhook; the Memory as the API shows it."""
    row = Memory(id=fact_id or uuid.uuid4(), workspace_id=workspace_id, subject=subject, content=content,
                 source=source, agent_id=agent_id, run_id=run_id, tool_call_id=tool_call_id, created_at=utcnow())
    work.session.add(row)
    await work.session.flush()
    data = memory_dict(row)
    await _owe_webhook(work, workspace_id, MEMORY_CREATED, data)
    return data


async def remove(work: RunWork, workspace_id: str, subject: str, memory_id: Any) -> dict[str, Any] | None:
    """Delete the subject's fact in `work` and owe its webhook; None if the subject has no such fact."""
    row = await find(work.session, workspace_id, subject, memory_id)
    if row is None:
        return None
    data = memory_dict(row)
    await work.session.execute(delete(Memory).where(Memory.id == row.id, *_of(workspace_id, subject)))
    await _owe_webhook(work, workspace_id, MEMORY_DELETED, data)
    return data


# -- the routes' service ------------------------------------------------------------------------

async def list_memories(session, auth: AuthContext, *, limit: int) -> dict[str, Any]:
    """GET /v1/loom/memories: the caller's subject's facts, newest first."""
    subject = auth.require_subject()
    rows = list(await session.scalars(select(Memory).where(*_of(auth.workspace_id, subject))
                                      .order_by(Memory.created_at.desc(), Memory.id).limit(limit)))
    return {"items": [memory_dict(m) for m in rows], "next_cursor": None}


async def add_memory(work: RunWork, auth: AuthContext, content: Any, caps: Caps) -> dict[str, Any]:
    """POST /v1/loom/memories (relay only): add a fact about the Service-Subject."""
    if auth.mode != "relay":
        raise HeddleError("forbidden", "Adding a memory needs the workspace key (relay); a person's session "
                                       "token may read and delete their memories.")
    subject = auth.require_subject()
    text = check_fact(content, caps)
    await ensure_room(work.session, auth.workspace_id, subject, caps)
    return await store(work, workspace_id=auth.workspace_id, subject=subject, content=text, source="api")


async def delete_memory(work: RunWork, auth: AuthContext, memory_id: Any) -> dict[str, Any]:
    """DELETE /v1/loom/memories/{id}: the caller's subject's fact; 404 for any other."""
    subject = auth.require_subject()
    data = await remove(work, auth.workspace_id, subject, memory_id)
    if data is None:
        raise HeddleError("not_found", "No such memory for this subject.")
    return {**data, "deleted": True}


# -- what a run's model is given ---------------------------------------------------------------

_FOR_MODEL = (select(Memory.id, Memory.content)
              .order_by(Memory.created_at.desc(), Memory.id.desc()))


async def for_model(session, workspace_id: str, subject: str, caps: Caps,
                    provider: str) -> tuple[list[ChatMessage], dict[str, Any]]:
    """The system message listing the subject's facts (newest first, within the caps) and what
    the turn's trace says of them (one statement)."""
    rows = list(await session.execute(_FOR_MODEL.where(*_of(workspace_id, subject)).limit(caps.max_facts)))
    given: list[Any] = []
    used = 0
    for row in rows[: caps.prompt_max_facts]:
        line = f"- [{row.id}] {row.content}"
        cost = estimate_tokens(line, provider)
        if used + cost > caps.prompt_max_tokens:
            break
        given.append(line)
        used += cost
    report = {"facts_given": len(given), "facts_left_out": len(rows) - len(given),
              "max_facts": caps.prompt_max_facts, "max_tokens": caps.prompt_max_tokens, "tokens": used}
    if not given:
        return [], report
    text = ("What you remember about this person (newest first; each with its id, which `forget` takes):\n"
            + "\n".join(given))
    return [ChatMessage(role="system", content=text)], report
