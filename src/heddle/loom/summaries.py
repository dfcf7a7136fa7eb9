"""Thread summaries: what a model is given instead of the messages that no longer fit its budget.

When a model turn's history is cut (loom/history.py: the newest earlier messages that fit the
model class's `history_tokens` were kept, older ones left out), the engine asks this module
for the conversation with a summary in place of the cut:

- the thread's newest stored summary (`thread_summaries`, loom/memory_models.py) is used when it
  covers every message left out;
- otherwise the messages after it, up to the newest one left out (as many as the summarizer's
  own budget takes, oldest first), are folded into a new rolling summary by a model: the
  agent file's `memory.summarize_with` class, or the agent's own. The request offers no tools
  (providers/summary_request.py; the `scripted` model answers deterministically). The summary
  and a turn of its own (`purpose: summary`: what was summarized, the summary, its cost) are
  written and charged in one fenced transaction, so a stale executor writes nothing;
  `UNIQUE (thread_id, through_seq)` means a span is never summarized twice (a second writer
  reads the first one's).

The model then gets the instructions, the summary, and the newest messages after it that fit
what the summary leaves of the budget. A summarizer that fails (a provider error, an unknown
class, a balance that cannot pay) never fails the run: the turn goes on with the cut history
(or an older summary) and its trace says why (`request.history.summary.error`).

Nothing is written and nothing is read here when no message was left out, so a run whose
thread fits its budget costs exactly the statements it did before.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from heddle.billing.service import InsufficientCredits
from heddle.db.base import Database, utcnow
from heddle.loom.history import build_conversation, estimate_tokens
from heddle.loom.lease import Fence
from heddle.loom.memory_models import ThreadSummary
from heddle.loom.models import Message, Run, ToolCall
from heddle.loom.models import Turn as TurnRow
from heddle.loom.providers.base import ChatMessage, ModelProviderError
from heddle.loom.providers.registry import cost_micro
from heddle.loom.providers.summary_request import summary_request
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.observability.logging import get_logger
from heddle.text import replace_nul

log = get_logger(__name__)

SPAN_PAGE = 500  # messages read per query while filling the summarizer's budget


class SummaryFailed(Exception):
    """The summary could not be made; `code` says why in the trace."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


async def latest_summary(session, thread_id: uuid.UUID) -> ThreadSummary | None:
    return await session.scalar(select(ThreadSummary).where(ThreadSummary.thread_id == thread_id)
                                .order_by(ThreadSummary.through_seq.desc()).limit(1))


def summary_trace(summary: ThreadSummary) -> dict[str, Any]:
    return {"id": str(summary.id), "through_seq": summary.through_seq, "messages": summary.messages,
            "model_class": summary.model_class, "made_by_run_id": str(summary.run_id) if summary.run_id else None}


class ThreadSummaries:
    def __init__(self, db: Database, registry, uow: RunUnitOfWork):
        self.db = db
        self.registry = registry
        self.uow = uow

    async def conversation(self, run: Run, agent, calls: list[ToolCall], fence: Fence, *, budget: int,
                           provider: str, history: dict[str, Any], preamble: list[ChatMessage],
                           vision: bool = False) -> list[ChatMessage] | None:
        """The turn's conversation with a summary in place of the cut (`history` is the cut's
        report, updated in place for the trace), or None to keep the cut conversation."""
        left_out = history.get("dropped_through_seq")
        if not left_out:
            return None
        async with self.db.session() as session:
            summary = await latest_summary(session, run.thread_id)
        error: dict[str, str] | None = None
        if summary is None or summary.through_seq < left_out:
            try:
                summary = await self._summarize(run, agent, fence, summary, left_out) or summary
            except SummaryFailed as failed:
                error = {"code": failed.code, "message": failed.message[:500]}
                log.info("thread_summary_failed", run_id=str(run.id), code=failed.code)
        if summary is None:
            history["summary"] = {"error": error}
            return None
        report: dict[str, Any] = {}
        async with self.db.session() as session:
            conversation = await build_conversation(
                session, run, agent, calls, history_tokens=budget, provider=provider, report=report,
                vision=vision, preamble=preamble, summary=(summary.through_seq, summary.content))
        report["summary"] = {**summary_trace(summary), **({"error": error} if error else {})}
        history.clear()
        history.update(report)
        return conversation

    async def _summarize(self, run: Run, agent, fence: Fence, previous: ThreadSummary | None,
                         left_out: int) -> ThreadSummary | None:
        """Fold the messages after `previous` up to `left_out` into a new summary, as a turn of
        the run; the summary (another writer's, if it made the same span first)."""
        name = (getattr(agent, "memory", None) or {}).get("summarize_with") or agent.model_class
        try:
            model_class = self.registry.get(name)
        except Exception:
            raise SummaryFailed("model_not_configured", f"Summarizer model class {name!r} is not configured.") from None
        after = previous.through_seq if previous else 0
        lines = await self._span(run, after, left_out, model_class.history_tokens, model_class.provider)
        if not lines:
            return None
        messages = summary_request(previous.content if previous else None, lines)
        try:
            response = await self.registry.provider_for(model_class).complete(model_class, messages, [], None)
        except ModelProviderError as exc:
            raise SummaryFailed("model_error", f"The summarizer failed: {exc}") from None
        text = replace_nul((response.text or "").strip())[0]
        if not text:
            raise SummaryFailed("model_error", "The summarizer answered with no text.")
        cost = cost_micro(model_class, response.input_tokens, response.output_tokens)
        through = lines[-1][0]
        covered = (previous.messages if previous else 0) + len(lines)
        turn_id, summary_id = uuid.uuid4(), uuid.uuid4()
        summarized = {"from_seq": lines[0][0], "through_seq": through, "messages": len(lines),
                      "previous_summary_id": str(previous.id) if previous else None, "summary_id": str(summary_id)}
        try:
            async with self.uow.transaction(fence=fence, workspace_id=run.workspace_id) as work:
                seq = run.turn_count + 1
                await work.hold(run, None, turn_count=seq, cost_micro=run.cost_micro + cost)
                await work.session.execute(insert(TurnRow.__table__), {
                    "id": turn_id, "run_id": run.id, "seq": seq, "model_class": model_class.name,
                    "input_tokens": response.input_tokens, "output_tokens": response.output_tokens,
                    "cost_micro": cost, "request": replace_nul({**response.request, "summarized": summarized})[0],
                    "response": {**response.response, "text": text}, "latency_ms": 0.0, "created_at": utcnow(),
                    "status": "ok", "attempts": [a.as_dict() for a in response.attempts], "purpose": "summary"})
                row = ThreadSummary(id=summary_id, thread_id=run.thread_id, workspace_id=run.workspace_id,
                                    through_seq=through, messages=covered, content=text, model_class=model_class.name,
                                    run_id=run.id, turn_id=turn_id, created_at=utcnow())
                work.session.add(row)
                await work.session.flush()
                work.charge_last(run, cost, reason="summary", ref=str(turn_id))
        except IntegrityError:  # another process summarized this span first: use its summary
            async with self.db.session() as session:
                return await latest_summary(session, run.thread_id)
        except InsufficientCredits:
            raise SummaryFailed("insufficient_credits",
                                "The workspace balance could not pay for the summary.") from None
        return row

    async def _span(self, run: Run, after: int, through: int, budget: int, provider: str) -> list[tuple[int, str, str]]:
        """The thread's messages of earlier runs with `after < seq <= through`, oldest first, while
        they fit the summarizer's `budget` (at least one, shortened if it alone is larger)."""
        lines: list[tuple[int, str, str]] = []
        used, last = 0, after
        async with self.db.session() as session:
            while True:
                page = list(await session.execute(
                    select(Message.seq, Message.role, Message.content)
                    .where(Message.thread_id == run.thread_id, Message.run_id != run.id,
                           Message.seq > last, Message.seq <= through)
                    .order_by(Message.seq).limit(SPAN_PAGE)))
                for seq, role, content in page:
                    cost = estimate_tokens(content, provider)
                    if used + cost > budget:
                        if not lines:  # one message larger than the whole budget: its beginning
                            lines.append((seq, role, content[: max(1, budget) * 3]))
                        return lines
                    lines.append((seq, role, content))
                    used += cost
                if len(page) < SPAN_PAGE:
                    return lines
                last = page[-1][0]
