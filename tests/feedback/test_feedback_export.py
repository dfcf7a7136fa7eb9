"""`heddle feedback export`: rated conversations become eval dataset lines that `heddle eval run`
accepts as they are."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from heddle.cli.main import app as cli
from heddle.loom.evals.dataset import parse
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run


def export(server, *args: str):
    return CliRunner().invoke(cli, ["feedback", "export", *args, "--database-url", server.settings.database_url])


def test_down_rated_conversations_export_as_dataset_lines(server, http, tenant, tmp_path):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    rated = {}
    for subject, text, rating in (("web:ann", "hello", "down"), ("web:ben", "Where does 021000021 go?", "up")):
        h = tenant.headers(subject)
        thread = open_thread(http, h, agent)
        run = wait_run(http, h, post(http, h, thread, text)["run_id"])
        message = run["latest_message"]
        resp = http.post(f"/v1/loom/messages/{message['id']}/feedback",
                         json={"rating": rating, "comment": f"{rating} from {subject}"}, headers=h)
        assert resp.status_code == 200, resp.text
        rated[rating] = (text, message)

    result = export(server, "--workspace", tenant.workspace_id, "--rating", "down", "--jsonl")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1
    line = lines[0]
    text, message = rated["down"]
    assert line["messages"] == [text] and line["answer"] == message["content"]
    assert line["feedback"]["comment"] == "down from web:ann" and line["feedback"]["agent"] == agent
    assert parse(result.stdout)[0].messages == (text,)  # a dataset as it stands

    # Both ratings, down first; a date after today gives nothing.
    result = export(server, "--workspace", tenant.workspace_id, "--jsonl")
    assert [json.loads(x)["feedback"]["rating"] for x in result.stdout.splitlines()] == ["down", "up"]
    result = export(server, "--workspace", tenant.workspace_id, "--since", "2999-01-01", "--jsonl")
    assert result.exit_code == 0 and result.stdout.strip() == ""

    # The exported file runs as an eval.
    path = tmp_path / "complaints.jsonl"
    path.write_text(export(server, "--workspace", tenant.workspace_id, "--jsonl").stdout)
    result = CliRunner().invoke(cli, ["eval", "run", "--workspace", tenant.workspace_id, "--agent", agent,
                                      "--dataset", str(path), "--json", "--database-url", server.settings.database_url])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[-1])["summary"]["passed"] == 2


def test_export_refusals(server, tenant):
    result = export(server, "--workspace", tenant.workspace_id, "--rating", "meh")
    assert result.exit_code == 1 and "rating" in result.output
    result = export(server, "--workspace", tenant.workspace_id, "--since", "yesterday")
    assert result.exit_code == 1 and "ISO date" in result.output
    result = export(server, "--workspace", "ws_nosuch")
    assert result.exit_code == 1 and "ws_nosuch" in result.output
