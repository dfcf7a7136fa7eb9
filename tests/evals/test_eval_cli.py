"""`heddle eval run` against the real engine: two versions of an agent where the second lost a
tool (exit 1, the regression named), every refused dataset (nothing run), the judge over a real
OpenAI-compatible fake (llmock), and the stored results (SQLite and PostgreSQL)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from heddle.cli.main import app as cli
from heddle.loom import agents as agent_service
from heddle.loom.agent_file import AgentFile
from heddle.loom.models import Agent, Run

HELPER = {"name": "helper", "model_class": "scripted", "instructions": "You help.", "tools": [{"builtin": "identify"}]}
CASES = [
    {"name": "routing", "messages": ["Where does 021000021 go?"],
     "expect": {"tool_called": "identify", "state": "closed", "max_credits": 5}},
    {"name": "hello", "messages": ["hello"], "expect": {"contains": "scripted model", "not_tool_called": "identify"}},
    {"name": "asks then answers", "messages": ["ask: Which account?", "DEUTDEFF please"],
     "expect": {"state": "closed", "regex": "You said: DEUTDEFF"}},
    {"name": "fails on purpose", "messages": ["fail: boom"], "expect": {"state": "failed"}},
    {"name": "waits for input", "messages": ["ask: Your name?"], "expect": {"state": "awaiting_input"}},
]


def write(tmp_path, lines: list, name="cases.jsonl") -> str:
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return str(path)


def heddle(server, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, [*args, "--database-url", server.settings.database_url, "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout.strip().splitlines()[-1])


def eval_runs(tenant) -> int:
    return tenant.run(lambda s: s.scalar(select(func.count()).select_from(Run).where(
        Run.workspace_id == tenant.workspace_id, Run.origin == "eval")))


def second_version_without_tools(tenant, agent_id: str) -> None:
    async def work(s):
        agent = await s.get(Agent, agent_id)
        await agent_service.update_agent(s, agent, AgentFile.model_validate({**HELPER, "tools": []}), ("scripted",))

    tenant.run(work)


def test_the_version_that_lost_a_tool_regresses(server, tenant, tmp_path):
    agent = tenant.add_agent(HELPER)
    dataset = write(tmp_path, CASES)
    base = ["eval", "run", "--workspace", tenant.workspace_id, "--agent", agent, "--dataset", dataset,
            "--concurrency", "3"]
    code, result = heddle(server, *base)
    assert code == 0, [(c["name"], c["checks"], c["answer"], c["error"]) for c in result["cases"] if not c["passed"]]
    assert result["summary"]["passed"] == len(CASES) and result["summary"]["failed"] == 0
    routing = result["cases"][0]
    assert routing["run_ids"] and routing["trace"].endswith(routing["run_ids"][-1]) and routing["credits"] > 0
    assert result["cases"][2]["state"] == "closed" and len(result["cases"][2]["run_ids"]) == 1

    second_version_without_tools(tenant, agent)
    code, result = heddle(server, *base, "--version", "2", "--baseline-version", "1")
    assert code == 1
    summary = result["summary"]
    assert summary["regressions"] == ["routing"], summary
    assert (summary["version"], summary["baseline_version"]) == (2, 1)
    routing = result["cases"][0]
    assert routing["regression"] is True and routing["baseline"]["passed"] is True and routing["passed"] is False
    failed = [c["expectation"] for c in routing["checks"] if not c["passed"]]
    assert "tool_called" in failed
    assert all(not c.get("regression") for c in result["cases"][1:])

    # Each case ran in a fresh thread of its own test subject, as runs of origin `eval`.
    subjects = tenant.run(lambda s: s.scalars(select(Run.subject).where(
        Run.workspace_id == tenant.workspace_id, Run.origin == "eval")))
    subjects = set(subjects)
    assert all(s.startswith("eval:") for s in subjects) and len(subjects) == 3 * len(CASES)

    # Stored: the list shows both evals, the latest with its regression.
    code, listed = heddle(server, "eval", "list", "--workspace", tenant.workspace_id, "--agent", agent)
    assert code == 0
    assert [(i["version"], i["baseline_version"], i["summary"]["regressions"]) for i in listed["items"]] == [
        (2, 1, ["routing"]), (1, None, [])]


def test_the_human_table_names_the_regression(server, tenant, tmp_path):
    agent = tenant.add_agent(HELPER)
    second_version_without_tools(tenant, agent)
    dataset = write(tmp_path, CASES[:2])
    result = CliRunner().invoke(cli, ["eval", "run", "--workspace", tenant.workspace_id, "--agent", agent,
                                      "--dataset", dataset, "--baseline-version", "1",
                                      "--database-url", server.settings.database_url])
    assert result.exit_code == 1
    assert "REGRESSION" in result.stdout and "1 regression(s) against v1: routing" in result.stdout


@pytest.mark.parametrize(("lines", "said"), [
    ([CASES[0], "{not json"], "cases.jsonl:2: not JSON"),
    ([CASES[0], {"name": "x", "messages": ["hi"], "expect": {"contains_text": "hi"}}],
     "cases.jsonl:2: unknown expectation 'contains_text'"),
    ([{"name": "x", "messages": [], "expect": {}}], "cases.jsonl:1: `messages` must be a non-empty list"),
    ([{"name": "x", "expect": {}}], "cases.jsonl:1: `messages` must be a non-empty list"),
    (["[1, 2]"], "cases.jsonl:1: a case must be a JSON object"),
    ([{"name": "x", "messages": ["hi"], "expect": {"regex": "("}}], "cases.jsonl:1: `regex` '(' does not compile"),
    ([{"name": "x", "messages": ["hi"], "expect": {"state": "done"}}], "cases.jsonl:1: `state` must be one of"),
    ([CASES[0], CASES[0]], "cases.jsonl:2: case name 'routing' is also on line 1"),
    ([], "no cases"),
])
def test_a_bad_dataset_is_refused_by_line_and_nothing_runs(server, tenant, tmp_path, lines, said):
    agent = tenant.add_agent(HELPER)
    code, out = heddle(server, "eval", "run", "--workspace", tenant.workspace_id, "--agent", agent,
                       "--dataset", write(tmp_path, lines))
    assert code == 2
    assert out["error"]["code"] == "invalid_dataset" and said in out["error"]["message"]
    assert "\n" not in out["error"]["message"]
    assert eval_runs(tenant) == 0


def test_unknown_judge_class_agent_and_version_are_refused(server, tenant, tmp_path):
    agent = tenant.add_agent(HELPER)
    judged = {"name": "judged", "messages": ["hello"],
              "expect": {"judge": {"rubric": "Polite.", "model_class": "no-such-judge"}}}
    args = ["eval", "run", "--workspace", tenant.workspace_id, "--dataset", write(tmp_path, [judged])]
    code, out = heddle(server, *args, "--agent", agent)
    assert code == 2 and out["error"]["code"] == "unknown_model_class" and "no-such-judge" in out["error"]["message"]
    ok_dataset = write(tmp_path, [CASES[1]], "ok.jsonl")
    code, out = heddle(server, *args[:-1], ok_dataset, "--agent", "agent_nosuch")
    assert code == 2 and out["error"]["code"] == "agent_not_found"
    code, out = heddle(server, *args[:-1], ok_dataset, "--agent", agent, "--version", "7")
    assert code == 2 and out["error"]["code"] == "version_not_found"
    assert eval_runs(tenant) == 0


def test_the_judge_scores_with_a_named_model_class(server, tenant, tmp_path, llmock, monkeypatch):
    classes = {"judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": llmock.base_url("openai"),
                         "api_key": "sk-llmock", "max_retries": 0, "timeout": 5}}
    monkeypatch.setenv("HEDDLE_MODEL_CLASSES", json.dumps(classes))
    llmock.reply('{"score": 0.9, "reason": "Polite and on topic."}').reply('{"score": 0.2, "reason": "Rude."}')
    agent = tenant.add_agent(HELPER)
    cases = [{"name": f"judged {n}", "messages": ["hello"],
              "expect": {"judge": {"rubric": "Is the answer polite?", "model_class": "judge", "min_score": 0.5}}}
             for n in (1, 2)]
    code, result = heddle(server, "eval", "run", "--workspace", tenant.workspace_id, "--agent", agent,
                          "--dataset", write(tmp_path, cases), "--concurrency", "1")
    assert code == 1
    verdicts = [(c["checks"][0]["passed"], c["checks"][0]["score"], c["checks"][0]["reason"]) for c in result["cases"]]
    assert verdicts == [(True, 0.9, "Polite and on topic."), (False, 0.2, "Rude.")]
