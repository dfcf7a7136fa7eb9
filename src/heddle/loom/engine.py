"""The run engine: advances one run until it closes, fails or waits for the caller.

Each step is its own database transaction (a model turn with its charge and tool-call rows;
one tool call; one state transition), so a crash loses at most the step in flight, and
`execute()` can resume any run from what the database holds.

`execute(run_id, fence)` runs for the executor that claimed the run with that fencing token
(heddle/loom/lease.py). Every write transaction is conditional on the token and no tool host
is called once it moved on: a stale executor gets `StaleExecutor` and stops, writing nothing.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert

from heddle.billing.service import InsufficientCredits
from heddle.config import Settings
from heddle.db.base import Database, utcnow
from heddle.errors import HeddleError
from heddle.loom import engine_sql as sql
from heddle.loom import memory, structured_output
from heddle.loom import queries as q
from heddle.loom.approvals import initial_status
from heddle.loom.arrival_order import release_handed
from heddle.loom.channels import EventSink
from heddle.loom.delta_writer import DeltaWriter
from heddle.loom.deltas import DeltaStream
from heddle.loom.history import build_conversation
from heddle.loom.lease import Fence
from heddle.loom.model_calls import ModelCalls
from heddle.loom.models import Agent, Message, Run, ToolCall
from heddle.loom.models import Turn as TurnRow
from heddle.loom.next_step import next_step
from heddle.loom.providers.base import DEFAULT_HISTORY_TOKENS, ModelClass, ModelProviderError, ModelResponse
from heddle.loom.providers.output import output_spec
from heddle.loom.providers.registry import cost_micro
from heddle.loom.run_event import RunEvent
from heddle.loom.serializers import message_dict, run_dict
from heddle.loom.states import (
    CALL_FAILED,
    CALL_PENDING,
    RUNNING,
    RunFailure,
    StaleExecutor,
)
from heddle.loom.summaries import ThreadSummaries
from heddle.loom.thread_queue import advance_queue
from heddle.loom.tool_steps import ToolSteps
from heddle.loom.tools import ToolKinds, Toolset, ToolsUnavailable
from heddle.loom.turn_record import (
    failed_turn_row,
    failure_message,
    truncation_failure,
    turn_row,
)
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.loom.views import render_run
from heddle.observability import tracing
from heddle.observability.logging import get_logger
from heddle.observability.metrics import Metrics
from heddle.runs_vocabulary import ORIGIN_EVAL, ORIGIN_PLAYGROUND
from heddle.text import replace_nul

log = get_logger(__name__)

_INSERT_TURN = insert(TurnRow.__table__)


@dataclass(frozen=True)
class Turn:
    """A model turn about to be called: which model, with which tools and conversation."""

    model_class: ModelClass
    provider: Any
    toolset: Toolset
    conversation: list
    history: dict[str, Any]  # the history cut, kept in the turn's request for the trace
    output_schema: dict[str, Any] | None = None  # a structured reply (loom/structured_output.py)


@dataclass(frozen=True)
class Reply:
    """What the model answered, and the deltas of it no writer has stored yet."""

    response: ModelResponse
    nul_replaced: Any
    deltas: list[RunEvent]
    message_id: uuid.UUID  # the id the reply's `message.delta` events announced
    latency_ms: float


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


class RunEngine:
    def __init__(self, db: Database, settings: Settings, registry, tools: ToolKinds,
                 realtime_sink: Callable[[], EventSink | None], metrics: Metrics, deltas: DeltaWriter,
                 uow: RunUnitOfWork):
        self.db = db
        self.deltas = deltas  # stores a reply's deltas while the model writes (and hands them to SSE)
        self.uow = uow  # every write of a step, and what happens after its commit
        self.settings = settings
        self.registry = registry
        self.tools = tools
        self.realtime_sink = realtime_sink  # the realtime publisher (or None): a reply's deltas as they come
        self.metrics = metrics
        # Model calls in flight, so that a cancel abandons one at once (see nudge()).
        self.model_calls = ModelCalls(db)
        # The pending tool calls of a turn (loom/tool_steps.py).
        self.tool_steps = ToolSteps(uow, tools, metrics, settings.run_tool_concurrency)
        # A summary in place of a history cut (loom/summaries.py); the facts a remembering
        # agent is given (loom/memory.py).
        self.summaries = ThreadSummaries(db, registry, uow)
        self.memory_caps = memory.Caps.of(settings)

    def nudge(self, run_id: uuid.UUID) -> None:
        """The run changed under this executor (a cancel): abandon its model call if it stopped."""
        self.model_calls.nudge(run_id)

    def _history_budget(self, agent: Agent) -> tuple[int, str]:
        """The agent's model class's history budget and provider (defaults if not configured:
        the model turn then fails `model_not_configured` anyway)."""
        try:
            model_class = self.registry.get(agent.model_class)
        except Exception:
            return DEFAULT_HISTORY_TOKENS, "scripted"
        return model_class.history_tokens, model_class.provider

    def _count(self, run: Run, state: str) -> None:
        """heddle_runs_total counts users' runs: the console's playground and evals stay out."""
        if run.origin not in (ORIGIN_PLAYGROUND, ORIGIN_EVAL):
            self.metrics.runs.labels(state).inc()

    def _sees_images(self, agent: Agent) -> bool:
        """Whether the agent's model class takes images (attachments as image parts)."""
        return agent.model_class in self.registry and self.registry.get(agent.model_class).vision

    async def execute(self, run_id: uuid.UUID, fence: Fence) -> bool:
        """Advance the run while this executor holds it with `fence` (see heddle.loom.lease).

        True when nothing is left to release: the run left `running` (its lease with it) or
        another executor holds it. With tracing on, all of it is one `invoke_agent` span in the
        trace of the request that created (or answered) the run, the model and tool calls under it.
        """
        if not tracing.enabled():
            return await self._execute(run_id, fence, None)
        async with self.db.session() as session:
            row = (await session.execute(sql.RUN_SPAN_READ, {"rid": run_id})).first()
        name, agent_id, traceparent = row if row is not None else ("unknown", None, None)
        with tracing.run_span(name, run_id=str(run_id), agent_id=agent_id,
                              parent_headers={"traceparent": traceparent} if traceparent else None) as span:
            return await self._execute(run_id, fence, span)

    async def _execute(self, run_id: uuid.UUID, fence: Fence, span: tracing.Span | None) -> bool:
        deadline = time.monotonic() + self.settings.run_max_seconds
        try:
            try:
                while await self._step(run_id, fence, deadline):
                    pass
                return True
            except RunFailure as failure:
                if span is not None:
                    span.fail(failure.code)
                await self._fail(fence, failure.code, failure.message, turn=failure.turn)
            except StaleExecutor:
                raise
            except Exception as exc:  # never leave a run stuck in `running` on a bug
                log.exception("run_engine_error", run_id=str(run_id))
                await self._fail(fence, "internal_error", f"unexpected engine error ({type(exc).__name__})")
            return False
        except StaleExecutor as stale:
            # Another executor holds the run now (this one was paused or cut off past its
            # lease) or it left `running`: whatever this one was doing is not written.
            log.warning("run_executor_stale", run_id=str(run_id), fence=fence.token, why=stale.why)
            return True

    # -- one step -------------------------------------------------------------------------

    async def _step(self, run_id: uuid.UUID, fence: Fence, deadline: float) -> bool:
        """Do one unit of work; False when the run no longer needs this executor.

        Read (one statement, and the run's calls once it had a turn), decide (`next_step`, pure),
        then do what was decided in a transaction of its own."""
        history: dict[str, Any] = {}  # the history cut, kept in the turn's request for the trace
        async with self.db.session() as session:
            row = (await session.execute(sql.STEP_READ, {"rid": run_id})).first()
            if row is None or row.Run.state != RUNNING:
                return False
            run, agent, balance, realtime = row
            if run.fence != fence.token:
                raise fence.stale()
            # A run's tool calls come from its turns: before its first turn there are none.
            calls = list(await session.scalars(sql.RUN_TOOL_CALLS, {"rid": run.id})) if run.turn_count else []
            step = next_step(calls, turn_count=run.turn_count, max_turns=self.settings.run_max_turns,
                             past_deadline=time.monotonic() > deadline, max_seconds=self.settings.run_max_seconds)
            if step.failure is not None:
                raise step.failure
            if step.kind == "model_turn":
                budget, provider = self._history_budget(agent)
                preamble: list = []
                if memory.remembers(agent):  # one statement, only for an agent that remembers
                    preamble, history["memory"] = await memory.for_model(
                        session, run.workspace_id, run.subject, self.memory_caps, provider)
                conversation = await build_conversation(session, run, agent, calls, history_tokens=budget,
                                                        provider=provider, report=history,
                                                        vision=self._sees_images(agent), preamble=preamble)
        # The step's reads are done: a new message's run lets the next message on its way
        # (loom/arrival_order.py); what follows (the SDK's request, tools) is not ordered.
        release_handed()
        realtime = bool(realtime) and self.realtime_sink() is not None
        if step.kind == "tools":
            await self.tool_steps.run(run, agent, list(step.calls), fence)
            return True
        if step.kind in ("await_approval", "await_outcome"):
            await self._pause(fence, step.kind)  # an approval is asked before the call is made
            return False
        if step.kind == "ask":
            await self._ask(run, fence, step.calls[0], realtime)
            return False
        if history.get("dropped_messages"):  # messages left out: a summary in their place
            facts = history.pop("memory", None)
            conversation = await self.summaries.conversation(
                run, agent, calls, fence, budget=budget, provider=provider, history=history,
                preamble=preamble, vision=self._sees_images(agent)) or conversation
            if facts is not None:
                history["memory"] = facts
        turn = await self._price(run, agent, conversation, balance, history)
        reply = await self._call(run, turn, deadline, realtime)
        if reply is None:  # the run stopped while the model was thinking: drop the call
            return False
        shaped = None
        if turn.output_schema is not None and not reply.response.tool_calls and not reply.response.truncated:
            shaped = await structured_output.shape(lambda t: self._call(run, t, deadline, realtime), turn, reply)
            if shaped is None:
                return False
            reply = shaped.reply
        return await self._record(run, calls, fence, turn, reply, realtime, shaped)

    # -- a model turn: price, call, record ------------------------------------------------

    async def _price(self, run: Run, agent: Agent, conversation, balance: int, history: dict[str, Any]) -> Turn:
        """What the turn will ask and of which model, and whether the balance can pay for it at
        worst (its input, estimated from characters, plus max_tokens of output)."""
        try:
            model_class = self.registry.get(agent.model_class)
        except Exception:
            raise RunFailure("model_not_configured",
                             f"Model class {agent.model_class!r} is not configured on this server.") from None
        try:  # an MCP server's tools are listed now (cached), for this run's subject
            toolset = await self.tools.offered(run, agent)
        except ToolsUnavailable as exc:
            raise RunFailure(exc.code, exc.message) from None
        est_in = sum(len(m.content or "") for m in conversation) // 3 + 50
        if balance <= 0 or balance < cost_micro(model_class, est_in, model_class.max_tokens):
            raise RunFailure("insufficient_credits", "The workspace balance cannot pay for the next model turn.")
        return Turn(model_class, self.registry.provider_for(model_class), toolset, conversation, history,
                    getattr(agent, "output_schema", None))

    async def _call(self, run: Run, turn: Turn, deadline: float, realtime: bool) -> Reply | None:
        """Call the model, its reply streaming as deltas; None if the run stopped meanwhile."""
        stream = DeltaStream(run.id, run.thread_id, sink=self.realtime_sink() if realtime else None,
                             store=self.deltas)
        started = time.perf_counter()
        response: ModelResponse | None = None
        try:
            # Awaited in this task (loom/model_calls.py): a model that answers without waiting
            # (the scripted one) costs no event-loop turn, so under load the run closes before
            # the caller's first poll. The timeout cancels this task inside the call.
            async with asyncio.timeout(max(0.001, deadline - time.monotonic())):
                response = await self.model_calls.call(run.id, turn.provider.complete(
                    turn.model_class, turn.conversation,
                    turn.toolset.specs() + ([output_spec(turn.output_schema)] if turn.output_schema else []), stream))
        except TimeoutError:
            raise RunFailure("max_duration_exceeded",
                             f"The run took longer than {self.settings.run_max_seconds:g} s.") from None
        except ModelProviderError as exc:
            # The failed call is a turn of the trace too, with every attempt (turn_record.py).
            row = failed_turn_row(run.id, run.turn_count + 1, turn.model_class, exc, turn.history,
                                  _ms_since(started))
            raise RunFailure("model_error", failure_message(exc), turn=replace_nul(row)[0]) from None
        finally:
            # The reply's deltas are stored before its message: those not yet written go in the
            # turn's transaction (`_record`); without a turn to record, the writer stores them.
            if response is None:
                await self.deltas.drain(run.id)
        if response is None:
            return None
        deltas = await self.deltas.take(run.id)
        response, nul_replaced = replace_nul(response)  # text PostgreSQL can hold (heddle/text.py)
        return Reply(response, nul_replaced, deltas, stream.message_id, _ms_since(started))

    async def _record(self, run: Run, calls: list[ToolCall], fence: Fence, turn: Turn, reply: Reply,
                      realtime: bool, shaped: structured_output.Shaped | None = None) -> bool:
        """The turn, its charge and what it leads to, in one transaction; False when it ended
        the run (an answer, or a reply cut off that cannot be acted on). A structured reply that
        needed a repair records its first attempt as a turn before it (`shaped.first`)."""
        model_class, response = turn.model_class, reply.response
        cost = cost_micro(model_class, response.input_tokens, response.output_tokens)
        first = shaped.first if shaped is not None else None
        first_cost = cost_micro(model_class, first.response.input_tokens, first.response.output_tokens) if first else 0
        finish = not response.tool_calls
        # A reply cut off at max_tokens that cannot be acted on fails the run; it is still billed
        # (the provider counted its tokens) and recorded, in the same transaction.
        cut_off = truncation_failure(response, model_class)
        invalid = shaped.error if shaped is not None and finish and not cut_off else None
        event = "fail" if cut_off or invalid else ("finish" if finish else None)
        failure = {"error_code": "model_error", "error_message": cut_off} if cut_off else {}
        if invalid:
            failure = {"error_code": "invalid_output", "error_message": "The reply did not match the agent's output "
                       f"schema, nor did the repaired one: {invalid}"}
        try:
            async with self.uow.transaction(fence=fence, realtime=realtime, workspace_id=run.workspace_id) as work:
                session = work.session
                # The fence guard carries the turn's counters and, for an answer, the transition.
                turn_seq = run.turn_count + 1 + (first is not None)
                await work.hold(run, event, turn_count=turn_seq, cost_micro=run.cost_micro + cost + first_cost,
                                **failure)
                if first is not None:  # the structured reply's first, invalid attempt
                    first_id = uuid.uuid4()
                    await session.execute(_INSERT_TURN, turn_row(
                        run.id, first_id, turn_seq - 1, turn, first, first_cost, {"output_error": shaped.first_error}))
                    work.charge_last(run, first_cost, reason="model_turn", ref=str(first_id))
                turn_id = uuid.uuid4()
                await session.execute(_INSERT_TURN, turn_row(
                    run.id, turn_id, turn_seq, turn, reply, cost, {"output_error": invalid} if invalid else {}))
                if cut_off or invalid:
                    work.run_updated(run.thread_id, await render_run(session, run))
                    await advance_queue(work, run.thread_id)
                elif finish:
                    # The id the reply's `message.delta` events announced.
                    message = await sql.add_assistant_message(session, run, response.text or "",
                                                              message_id=reply.message_id,
                                                              data=shaped.data if shaped is not None else None)
                    self._count(run, "closed")
                    # Always built, realtime or not: the SSE log and the webhooks need them too.
                    work.message_created(run.thread_id, message_dict(message))
                    work.run_updated(run.thread_id, await self._render(session, run, message))
                    await advance_queue(work, run.thread_id)  # the thread's next queued run
                else:
                    seq = max((tc.seq for tc in calls), default=0)
                    await work.insert_tool_calls([self._new_tool_call(run, turn.toolset, turn_id, seq + i, call)
                                                  for i, call in enumerate(response.tool_calls, start=1)])
                # The reply's deltas are stored ahead of its message (a repaired reply's first ones too).
                work.first[run.id] = (first.deltas if first is not None else []) + reply.deltas
                # Charged when the unit ends, after its events are staged (RunWork.charge_last).
                work.charge_last(run, cost, reason="model_turn", ref=str(turn_id))
        except InsufficientCredits:
            raise RunFailure("insufficient_credits",
                             "The workspace balance could not pay for the model turn.") from None
        self.metrics.credits_charged.labels("model_turn").inc(cost)  # once it committed
        if cut_off:
            self._count(run, "failed")
            log.info("run_failed", run_id=str(run.id), code="model_error", truncated=True)
            return False
        return not finish

    def _new_tool_call(self, run: Run, toolset: Toolset, turn_id: uuid.UUID, seq: int, call) -> dict[str, Any]:
        definition = toolset.definition(call.name)
        now = utcnow()
        tc = dict(id=uuid.uuid4(), run_id=run.id, turn_id=turn_id, seq=seq, model_call_id=call.id, name=call.name,
                  args=call.arguments or {}, status=CALL_PENDING, attempts=[], cost_micro=0, result=None,
                  kind=definition["kind"] if definition else "unknown", interaction="auto", risk="low",
                  reliability="idempotent", connection_id=definition and definition.get("connection_id"),
                  patch_ref=None, outcome_state=None,
                  outcome_detail=None, outcome_at=None, fed_back=False, approval=None, created_at=now,
                  updated_at=now)
        if definition is None:
            tc.update(status=CALL_FAILED, result={"error": {
                "code": "unknown_tool", "message": f"The agent has no tool {call.name!r}."}})
        elif "interaction" in definition:  # a kind with interaction, risk and reliability (hosted)
            status, approval = initial_status(definition, tc["args"])
            tc.update(interaction=definition["interaction"], risk=definition["risk"],
                      reliability=definition["reliability"], status=status, approval=approval)
        return tc  # inserted by RunWork.insert_tool_calls, which checks the initial status

    async def _render(self, session, run: Run, latest: Message) -> dict[str, Any]:
        """The run as the API shows it, from what this step already knows (no read but its connection)."""
        return run_dict(run, latest=latest, connection=await q.connection_ref(session, run.connection_id))

    async def _ask(self, run: Run, fence: Fence, call: ToolCall, realtime: bool) -> None:
        question = str((call.args or {}).get("question") or "").strip() or "Could you tell me more?"
        async with self.uow.transaction(fence=fence, realtime=realtime, workspace_id=run.workspace_id) as work:
            await work.hold(run, "ask_user", pending_question=question)
            message = await sql.add_assistant_message(work.session, run, question)
            work.message_created(run.thread_id, message_dict(message))
            work.run_updated(run.thread_id, await self._render(work.session, run, message))
        self._count(run, "awaiting_input")

    async def _pause(self, fence: Fence, event: str) -> None:
        async with self.uow.transaction(fence=fence) as work:
            run = await work.session.get(Run, fence.run_id)
            work.workspace_id = run.workspace_id
            await work.move(run, event)
            work.run_updated(run.thread_id, await render_run(work.session, run))
        self._count(run, "awaiting_input" if event == "await_approval" else "awaiting_outcome")

    async def _fail(self, fence: Fence, code: str, message: str, turn: dict[str, Any] | None = None) -> None:
        run_id = fence.run_id
        try:
            async with self.uow.transaction(fence=fence) as work:
                run = await work.session.get(Run, run_id)  # fenced transition: StaleExecutor if not ours
                work.workspace_id = run.workspace_id
                counters: dict[str, Any] = {}
                if turn is not None:  # the failed model turn, on the record with the failure
                    await work.session.execute(_INSERT_TURN, turn)
                    counters["turn_count"] = turn["seq"]
                await work.move(run, "fail", error_code=code, error_message=replace_nul(message[:2000])[0],
                                **counters)
                work.run_updated(run.thread_id, await render_run(work.session, run))
                await advance_queue(work, run.thread_id)
        except HeddleError:
            return
        self._count(run, "failed")
        log.info("run_failed", run_id=str(run_id), code=code)

