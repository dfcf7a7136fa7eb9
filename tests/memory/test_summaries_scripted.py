"""Summaries with the `scripted` model (no key), a 2,000-message thread, the agent file's
`memory:` section refused at save, and a `remember` write fenced like any other (SQLite and
PostgreSQL)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select, update
from typer.testing import CliRunner

from heddle.cli.main import app as cli
from heddle.db.base import utcnow
from heddle.loom.agent_file import AgentFileError
from heddle.loom.lease import Fence, claim
from heddle.loom.memory_models import Memory, ThreadSummary
from heddle.loom.models import AgentVersion, Message, Run, ToolCall
from heddle.loom.providers.tokens import count_words
from heddle.loom.states import InvalidCallTransition, StaleExecutor
from support.loom import open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant

BUDGET = 150  # the `tight` class's history_tokens, in the scripted model's words
CLASSES = json.dumps({"tight": {"provider": "scripted", "history_tokens": BUDGET, "input_price_per_1k": 0.01,
                                "output_price_per_1k": 0.02}})
FIRST = "My account is ACC-FIRST-1234 at Northwind bank."


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request, tmp_path_factory):
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('summaries') / 'heddle.db'}"
    else:
        url = request.getfixturevalue("pg_database_factory")()
    live = LiveServer(database_url=url, model_classes=CLASSES).start()
    yield live
    live.stop()


@pytest.fixture
def tenant(server):
    return make_tenant(server)


@pytest.fixture
def agent(tenant):
    return tenant.add_agent({"name": "teller", "model_class": "tight", "instructions": "You are a teller.",
                             "memory": {"remember": True}}, classes=("scripted", "tight"))


def talk(http, h, thread, content) -> dict:
    run = wait_run(http, h, post(http, h, thread, content)["run_id"], states=("closed", "failed"))
    assert run["state"] == "closed", run
    return http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]


def long_thread(http, h, agent) -> tuple[str, dict]:
    """A thread whose earlier messages no longer fit: the trace of the run that summarized."""
    thread = open_thread(http, h, agent)
    trace = talk(http, h, thread, FIRST)
    for i in range(6):
        trace = talk(http, h, thread, f"question {i}")
        if trace["turns"][0]["purpose"] == "summary":
            return thread, trace
    raise AssertionError("no summary was made")


def test_scripted_summary_is_deterministic_and_shown_in_the_trace(http, tenant, agent):
    _, trace = long_thread(http, tenant.headers("web:sum-a"), agent)
    summary_turn, reply = trace["turns"]
    text = summary_turn["response"]["text"]
    assert text.startswith("user: My account is ACC-FIRST-1234") and summary_turn["request"]["tools"] == []
    assert summary_turn["request"]["summarized"]["from_seq"] == 1 and summary_turn["cost_credits"] > 0
    assert summary_turn["seq"] == 1 and reply["seq"] == 2
    sent = reply["request"]["messages"]
    assert sent[0] == {"role": "system", "content": "You are a teller."}
    assert sent[1]["role"] == "system" and text in sent[1]["content"]
    assert FIRST not in [m["content"] for m in sent]
    history = reply["request"]["history"]
    assert history["summary"]["id"] and history["summary"]["through_seq"] >= 1
    assert history["kept_tokens"] + count_words(sent[1]["content"]) <= BUDGET
    # The same conversation in another thread: the same summary, word for word.
    _, again = long_thread(http, tenant.headers("web:sum-b"), agent)
    assert again["turns"][0]["response"]["text"] == text
    # The trace's cost adds up: the run paid for both turns.
    assert trace["cost_credits"] == pytest.approx(summary_turn["cost_credits"] + reply["cost_credits"], abs=1e-6)


def test_a_stored_summary_is_used_not_made_again(http, tenant, agent):
    h = tenant.headers("web:sum-reuse")
    thread, _ = long_thread(http, h, agent)
    nxt = talk(http, h, thread, "hi")
    kinds = [t["purpose"] for t in nxt["turns"]]
    summaries = tenant.run(lambda s: s.scalar(select(func.count()).select_from(ThreadSummary)
                                               .where(ThreadSummary.thread_id == uuid.UUID(thread))))
    # Either the stored summary still covers what fell out (no new turn), or a newer span is
    # folded in (one new summary row for a new span, never two for one).
    assert kinds in (["reply"], ["summary", "reply"]) and summaries == kinds.count("summary") + 1
    spans = tenant.run(lambda s: s.scalars(select(ThreadSummary.through_seq)
                                           .where(ThreadSummary.thread_id == uuid.UUID(thread))))
    spans = list(spans)
    assert len(spans) == len(set(spans))


def test_a_thread_of_2000_messages_stays_in_budget(http, tenant, agent):
    h = tenant.headers("web:sum-2000")
    thread = open_thread(http, h, agent)
    earlier_run = uuid.uuid4()

    async def seed(s):
        now = utcnow()
        await s.execute(insert(Message), [
            {"id": uuid.uuid4(), "thread_id": uuid.UUID(thread), "run_id": earlier_run, "seq": i + 1,
             "role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "word " * 20,
             "created_at": now} for i in range(2000)])

    tenant.run(seed)
    trace = talk(http, h, thread, "and now?")
    summary_turn, reply = trace["turns"]
    assert summary_turn["purpose"] == "summary"
    # The summarizer's own request stays within its budget too (it folds in what fits).
    summarized = summary_turn["request"]["summarized"]
    assert 0 < summarized["messages"] < 2000 and summarized["from_seq"] == 1
    history = reply["request"]["history"]
    summary_words = count_words(reply["request"]["messages"][1]["content"])
    assert history["kept_tokens"] + summary_words <= BUDGET
    assert history["dropped_messages"] > 0  # what neither the summary nor the budget covers is reported
    assert len(reply["request"]["messages"]) < 20


def test_an_unknown_summarizer_class_is_refused_when_the_agent_is_saved(server, tenant, tmp_path: Path):
    with pytest.raises(AgentFileError, match="memory.summarize_with: unknown model class 'nope'"):
        tenant.add_agent({"name": "x", "model_class": "tight", "memory": {"summarize_with": "nope"}},
                         classes=("scripted", "tight"))
    for memory, message in ((" summarize_with: nope", "memory.summarize_with: unknown model class 'nope'"),
                            (" remember: maybe", "memory.remember"), (" forget_all: true", "memory.forget_all")):
        path = tmp_path / "agent.yaml"
        path.write_text(f"name: x\nmodel_class: scripted\nmemory:\n {memory}\n")
        result = CliRunner().invoke(cli, ["agent", "create", "--workspace", tenant.workspace_id, "--file", str(path),
                                          "--database-url", server.settings.database_url])
        assert result.exit_code != 0 and message in result.output, result.output


def test_a_remember_write_is_fenced_and_never_stored_twice(server, http, tenant, agent):
    h = tenant.headers("web:fenced")
    thread = open_thread(http, h, agent)
    trace = talk(http, h, thread, 'call: remember {"fact": "Rex is the dog."}')
    call_id = uuid.UUID(trace["turns"][0]["tool_calls"][0]["id"])
    container = server.services
    facts = lambda: tenant.run(lambda s: s.scalar(select(func.count()).select_from(Memory).where(  # noqa: E731
        Memory.workspace_id == tenant.workspace_id, Memory.subject == "web:fenced")))
    assert facts() == 1

    async def crash_before_the_record():
        """The state a process leaves when it dies carrying the call out: the call pending, the
        run running under its fence, no fact (the fact commits with the call's record)."""
        async with container.db.transaction() as s:
            await s.execute(update(ToolCall).where(ToolCall.id == call_id).values(status="pending", result=None))
            await s.execute(update(Run).where(Run.id == uuid.UUID(trace["id"])).values(
                state="running", lease_owner="dead", closed_at=None))
            await s.execute(Memory.__table__.delete().where(Memory.tool_call_id == call_id))

    async def carry_out(fence: Fence) -> None:
        async with container.db.session() as s:
            run = await s.get(Run, fence.run_id)
            call = await s.get(ToolCall, call_id)
            agent_version = await s.get(AgentVersion, (run.agent_id, run.agent_version))
        await container.engine.tool_steps.run(run, agent_version, [call], fence)

    server.call(crash_before_the_record())
    assert facts() == 0

    async def take_over():
        return await claim(container.db, uuid.UUID(trace["id"]), "taker", force=True)

    old = Fence(uuid.UUID(trace["id"]), server.call(take_over()).token - 1)
    with pytest.raises(StaleExecutor):  # the executor that lost the run writes nothing
        server.call(carry_out(old))
    assert facts() == 0
    new = Fence(old.run_id, old.token + 1)
    server.call(carry_out(new))
    assert facts() == 1
    with pytest.raises(InvalidCallTransition):  # the same call again: recorded already, so no second fact
        server.call(carry_out(new))
    assert facts() == 1
