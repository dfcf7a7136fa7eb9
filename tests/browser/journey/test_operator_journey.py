"""Issue 19's journey in real Chromium: an operator logs in through a one-time link and creates
an agent in the console, a customer of the example site talks to it through the widget
(streamed reply, answered question, approved tool), and the operator finds that run's trace in
the console with its tool call and cost. Screenshots: tests/browser/screenshots/journey-*.png."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import httpx
from typer.testing import CliRunner

from heddle.cli.main import app as cli
from support.web_chat import web_chat_site

AGENT_YAML = """name: Support desk
model_class: scripted
instructions: You help Acme Bank customers with their balance and transfers.
tools:
  - name: get_balance
    description: The customer's available balance
    connection: payments
    path: /tools/get_balance
  - name: send_transfer
    description: Send money (a person approves transfers above 100)
    parameters:
      type: object
      properties: {amount: {type: number}, to: {type: string}}
      required: [amount]
    connection: payments
    path: /tools/send_transfer
    risk: high
    interaction: approve
    approve_when: {above: {amount: 100}}
    reliability: at_most_once
"""


def heddle(db: str, *args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--database-url", db, "--json"])
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_operator_creates_an_agent_a_customer_uses_it_in_the_widget_and_the_trace_is_in_the_console(
        run_browser, built_web, tmp_path):
    with web_chat_site(tmp_path, ["journey"]) as site:
        db, server = site["database_url"], site["server"]
        workspace = json.loads((tmp_path / "state" / "setup.json").read_text())["workspace_id"]
        operator = heddle(db, "operator", "create", "--email", "ops@acme.test")
        report = run_browser("journey/journey.mjs", timeout=300, env={
            "HEDDLE_URL": site["HEDDLE_URL"], "SITE_URL": site["SITE_URL"], "WS": workspace,
            "LOGIN_PATH": urlparse(operator["login_url"]).path, "AGENT_YAML": AGENT_YAML,
            "USER_NAME": "journey", "USER_PASSWORD": "pw-journey"})

        # The console session: an HTTP-only, SameSite=Strict cookie scoped to /console.
        assert report["cookie"] == {"httpOnly": True, "secure": True, "sameSite": "Strict", "path": "/console"}
        # The widget talked to the agent the operator had just made, in the example's workspace.
        agent = report["agent_id"]
        assert report["widget_agent"] == agent
        assert agent in {a["id"] for a in heddle(db, "agent", "list", "--workspace", workspace)["items"]}
        assert report["stream"]["deltas"] > 1 and report["stream"]["before_final"]
        assert report["answer"] == "You said: Ada"
        assert "250" in report["card"] and "send_transfer" in report["tool_reply"]
        assert report["reply_in_view"]
        assert report["tool_run"]["state"] == "closed"
        # What the console showed is what the API holds: the approved call, and a real cost.
        assert report["trace"]["tool_call"] and report["trace"]["approved"]
        assert report["runs_listed"] >= 1
        run_id = report["tool_run"]["id"]
        with httpx.Client(base_url=server.base_url) as http:
            key = heddle(db, "key", "create", "--workspace", workspace)["secret"]
            trace = http.get(f"/v1/loom/runs/{run_id}/trace",
                             headers={"Authorization": f"Bearer {key}", "Service-Subject": "web:journey"})
        assert trace.status_code == 200, trace.text
        data = trace.json()["data"]
        calls = [c for t in data["turns"] for c in t["tool_calls"]]
        assert [c["name"] for c in calls] == ["send_transfer"] and calls[0]["status"] == "succeeded"
        cost = data["run"]["cost_credits"] if "run" in data else data["cost_credits"]
        assert cost > 0 and str(cost).rstrip("0").rstrip(".") in report["trace"]["cost_text"].replace(",", "")
    for name in ("1-login-link", "2-agent-created", "3-widget-streamed", "4-widget-question",
                 "5-widget-approval", "6-widget-done", "7-console-runs", "8-console-trace"):
        shot = Path(__file__).parents[1] / "screenshots" / f"journey-{name}.png"
        assert shot.stat().st_size > 5000, shot
