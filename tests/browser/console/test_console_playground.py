"""The console's playground in real Chromium: chat with an unsaved draft and see its trace build."""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest
from typer.testing import CliRunner

from heddle.cli.main import app
from support.server import LiveServer

pytestmark = pytest.mark.slow
AGENT_YAML = "name: Payments helper\nmodel_class: scripted\ninstructions: You help.\ntools:\n  - builtin: identify\n"


def cli(db: str, *args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--database-url", db, "--json"])
    assert result.exit_code == 0, (args, result.stdout)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_playground_chats_with_a_draft_and_shows_its_trace(tmp_path, built_web, run_browser):
    db = f"sqlite+aiosqlite:///{tmp_path}/playground.db"
    server = LiveServer(database_url=db).start()
    try:
        ws = cli(db, "workspace", "create", "--name", "Playground", "--credits", "10")
        (tmp_path / "agent.yaml").write_text(AGENT_YAML)
        agent = cli(db, "agent", "create", "--workspace", ws["id"], "--file", str(tmp_path / "agent.yaml"))
        operator = cli(db, "operator", "create", "--email", "pg@example.com")
        r = run_browser("console/playground.mjs", timeout=180, env={
            "HEDDLE_URL": server.base_url, "WS": ws["id"], "AGENT_ID": agent["id"],
            "LOGIN_PATH": urlparse(operator["login_url"]).path})
        assert not [e for e in r["console_errors"] if e.startswith("pageerror")], r["console_errors"]
        head = r["trace_head"].lower()  # the heading is set in capitals by the stylesheet
        assert "closed" in head and "origin playground" in head and "credits" in head
        # The draft has no tools: the scripted model answers with its help text, no identify call.
        assert r["turns"] and "none" in r["turns"][0]
        assert r["events"][-1].lower().startswith("closed")
        assert r["log"][0] == "You: who is DEUTDEFF?" and r["log"][-1].startswith("Agent: I am the scripted model")
        assert any(p.endswith(f"/playground/runs/{r['run_id']}/events") for p in r["sse"])
        assert len(r["versions"]) == 1  # the draft is not a version of the agent
    finally:
        server.stop()
