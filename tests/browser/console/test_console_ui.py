"""The operator console in real Chromium against a real server: seeded with the real CLI
(workspace, key, agent, operator) and real /v1 runs of the built-in `scripted` model."""

from __future__ import annotations

import json
import time
from urllib.parse import urlparse

import pytest
from typer.testing import CliRunner

from heddle.cli.main import app
from support.server import LiveServer

runner = CliRunner()

AGENT_YAML = """name: Payments helper
model_class: scripted
instructions: You help customers check where their money goes.
tools:
  - builtin: identify
"""


def cli(db: str, *args: str) -> dict:
    result = runner.invoke(app, [*args, "--database-url", db, "--json"])
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def wait_closed(client, run_id: str, headers: dict) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        run = client.get(f"/v1/loom/runs/{run_id}", headers=headers).json()["data"]
        if run["terminal"]:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end: {run}")


@pytest.fixture
def seeded(tmp_path, built_web):
    db = f"sqlite+aiosqlite:///{tmp_path}/console.db"
    server = LiveServer(database_url=db).start()
    try:
        ws = cli(db, "workspace", "create", "--name", "Acme payments", "--credits", "100")
        key = cli(db, "key", "create", "--workspace", ws["id"])
        agent_file = tmp_path / "agent.yaml"
        agent_file.write_text(AGENT_YAML)
        agent = cli(db, "agent", "create", "--workspace", ws["id"], "--file", str(agent_file))
        operator = cli(db, "operator", "create", "--email", "ops@example.com")
        headers = {"Authorization": f"Bearer {key['secret']}", "Service-Subject": "web:alice"}
        with server.client() as c:
            thread = c.post("/v1/loom/threads", json={"agent": agent["id"]}, headers=headers).json()["data"]
            sent = c.post(f"/v1/loom/threads/{thread['id']}/messages", headers=headers,
                          json={"content": 'call: identify {"identifier": "DEUTDEFF"}'}).json()["data"]
            run = wait_closed(c, sent["run_id"], headers)
        assert run["state"] == "closed" and run["cost_credits"] > 0
        server.flush_request_log()
        yield {"server": server, "ws": ws, "key": key, "agent": agent, "run": run, "thread": thread,
               "login_path": urlparse(operator["login_url"]).path}
    finally:
        server.stop()


def test_the_console_signs_in_shows_every_page_with_real_data_and_changes_things(seeded, run_browser):
    s = seeded
    report = run_browser("console/console_pages.mjs", timeout=300, env={
        "HEDDLE_URL": s["server"].base_url, "LOGIN_PATH": s["login_path"], "WS": s["ws"]["id"],
        "WS_NAME": s["ws"]["name"], "KEY_SECRET": s["key"]["secret"], "RUN_ID": s["run"]["id"],
        "THREAD_ID": s["thread"]["id"], "AGENT_ID": s["agent"]["id"]})

    # No script error; the only console lines are Chromium's notes on the failures the test provokes
    # (signed out 401, refused identifier, refused origin, bad agent file, unknown run).
    errors = report["console_errors"]
    assert not [e for e in errors if not e.startswith("console: Failed to load resource")], errors
    assert len(errors) <= 8, errors
    # Signed out: how to get in; the login link works once.
    assert report["signed_out_mentions_cli"]
    assert report["login_reuse_status"] == [410, 410]
    # Runs: real rows, filters, and a run started elsewhere appears live (poll every 2 s).
    assert report["runs_rows"] >= 1
    assert report["filter_failed_hides_closed_run"] and report["filter_subject_empty"]
    assert report["live_no_reload"] and report["live_update_ms"] < 15000
    assert "new run" in report["live_region"]
    # Trace: the identify tool call with its arguments, status and cost; turns; attributed calls.
    trace = report["trace"]
    assert trace["tool_call"] and trace["tool_status"] == "succeeded"
    assert trace["model_turns"] >= 1 and trace["has_raw_json"] == 1
    assert "credits" in trace["cost_text"] and "credits" in trace["tool_cost_text"]
    assert "in" in trace["tokens_text"] and "out" in trace["tokens_text"]
    # Conversation.
    assert "DEUTDEFF" in report["thread"]["user"] and report["thread"]["assistant"]
    # Ledger: chart and a grant that moves the balance by 25.
    ledger = report["ledger"]
    assert ledger["chart"] == 1 and ledger["rows"] >= 2
    to_num = lambda t: float(t.split()[0].replace(",", ""))  # noqa: E731
    assert to_num(ledger["balance_after"]) == pytest.approx(to_num(ledger["balance_before"]) + 25)
    # Request log filtered to client errors.
    assert report["requests"]["all"] >= 3
    assert report["requests"]["statuses_4xx"] and all(st == "400" for st in report["requests"]["statuses_4xx"])
    # Identify: a result card, and a refused identifier in words.
    assert "Deutsche Bank" in report["identify"]["card"] and "identified" in report["identify"]["card"]
    assert "not valid" in report["identify"]["error"] and "invalid_identifier" in report["identify"]["error"]
    # Settings saved (and still there after a reload); a wildcard origin refused readably.
    assert report["settings"]["origins_after_reload"] == "https://app.example.com"
    assert report["settings"]["retention_after_reload"] == "30"
    assert "Not saved" in report["settings"]["refused"]
    # Keys: the secret shown once, working, gone after a reload, dead after revoking.
    keys = report["keys"]
    assert keys["secret_prefix"] == "sk_live_" and keys["copy_button"] == 1 and keys["new_key_status"] == 200
    assert keys["secret_after_reload"] == 0 and not keys["secret_in_page"]
    assert keys["revoked_key_status"] == 401
    # Agents: created at version 1, edited into version 2, history kept; bad files refused in words.
    agent = report["agent"]
    assert "version 1" in agent["created_sub"] and "version 2" in agent["after_edit_sub"]
    assert agent["versions"] == 2 and agent["instructions"] == "Second words."
    assert "First words." in agent["v1"]
    assert "does not parse" in agent["parse_error"]
    assert "Not saved" in agent["server_error"]
    assert report["connections"] == 1
    assert "does not exist" in report["unknown_run_error"]
    # Keyboard and landmarks.
    assert report["a11y"]["focus_after_nav"] == "page-title" and report["a11y"]["first_tab"] == "Skip to content"
    assert all(n >= 1 for n in report["a11y"]["landmarks"]) and report["a11y"]["live_region"] >= 1
    assert report["signed_out_again"]
    # Every mutation carried the CSRF header.
    assert report["mutations"] and all(m["csrf"] for m in report["mutations"]), report["mutations"]
