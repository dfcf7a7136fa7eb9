"""The operator console in real Chromium against a real server: seeded with the real CLI
(workspace, key, agent, operator) and real /v1 runs of the built-in `scripted` model."""

from __future__ import annotations

import json
import time
from urllib.parse import urlparse

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse
from typer.testing import CliRunner

from heddle.cli.main import app
from support.server import LiveServer
from support.toolhosts import LoopbackToolHost

runner = CliRunner()

AGENT_YAML = """name: Payments helper
model_class: scripted
instructions: You help customers check where their money goes.
tools:
  - builtin: identify
  - name: fee_quote
    description: Quote the fee of a transfer
    parameters: {type: object, properties: {amount: {type: number}}, required: [amount]}
    connection: fees
    path: /tools/fee_quote
    risk: low
    interaction: auto
    reliability: idempotent
"""


class FlakyFeeHost(LoopbackToolHost):
    """The caller's tool host (it verifies Heddle's signed calls and mints subject tokens); its
    fee tool answers 503 once, then a quote: the trace has two attempts to show."""

    paths = ("/tools/fee_quote",)

    def __init__(self, request_secret: str, key_id: str):
        super().__init__(request_secret, key_id)
        self.quotes = 0

    async def _handle(self, request: Request):
        body = json.loads(await request.body() or b"{}")
        if request.url.path == "/mint":
            return JSONResponse({"status": "success", "data": {"token": self.mint_token(body["subject"]),
                                                               "expires_in": 120}})
        self.quotes += 1
        if self.quotes == 1:
            return JSONResponse({"error": "warming up"}, status_code=503)
        return JSONResponse({"fee": 0.25, "currency": "EUR"})


def cli(db: str, *args: str) -> dict:
    result = runner.invoke(app, [*args, "--database-url", db, "--json"])
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def wait_state(client, run_id: str, headers: dict, state: str | None = None) -> dict:
    """Poll the run until it is in `state` (or, without one, terminal)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        run = client.get(f"/v1/loom/runs/{run_id}", headers=headers).json()["data"]
        if run["state"] == state or (state is None and run["terminal"]):
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not reach {state or 'an end'}: {run}")


def wait_closed(client, run_id: str, headers: dict) -> dict:
    return wait_state(client, run_id, headers)


@pytest.fixture
def seeded(tmp_path, built_web):
    db = f"sqlite+aiosqlite:///{tmp_path}/console.db"
    server = LiveServer(database_url=db).start()
    fees = None
    try:
        ws = cli(db, "workspace", "create", "--name", "Acme payments", "--credits", "100")
        key = cli(db, "key", "create", "--workspace", ws["id"])
        # The caller's tool host: it needs the request secret (shown when rotated), and the
        # workspace needs its JWKS and mint URL so relay runs can call hosted tools.
        secret = cli(db, "workspace", "update", ws["id"], "--rotate-request-secret")["request_secret"]
        fees = FlakyFeeHost(secret, key["id"]).start()
        jwks = tmp_path / "jwks.json"
        jwks.write_text(json.dumps(fees.jwks))
        cli(db, "workspace", "update", ws["id"], "--jwks-file", str(jwks), "--mint-url", f"{fees.base_url}/mint", "--dev")
        cli(db, "connection", "create", "--workspace", ws["id"], "--name", "fees", "--base-url", fees.base_url, "--dev")
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
            # A run that asks a question and is answered: running, awaiting_input, running, closed.
            dora = {**headers, "Service-Subject": "web:dora"}
            asking = c.post("/v1/loom/threads", json={"agent": agent["id"]}, headers=dora).json()["data"]
            asked = c.post(f"/v1/loom/threads/{asking['id']}/messages", headers=dora,
                           json={"content": "ask: What is your name?"}).json()["data"]
            wait_state(c, asked["run_id"], dora, "awaiting_input")
            c.post(f"/v1/loom/threads/{asking['id']}/messages", headers=dora, json={"content": "Ada"})
            assert wait_closed(c, asked["run_id"], dora)["state"] == "closed"
            # A hosted tool whose host fails once: the trace shows both attempts.
            erin = {**headers, "Service-Subject": "web:erin"}
            quoting = c.post("/v1/loom/threads", json={"agent": agent["id"]}, headers=erin).json()["data"]
            quoted = c.post(f"/v1/loom/threads/{quoting['id']}/messages", headers=erin,
                            json={"content": 'call: fee_quote {"amount": 120}'}).json()["data"]
            assert wait_closed(c, quoted["run_id"], erin)["state"] == "closed"
            # A run that fails (the scripted model's `fail:`): the overview shows its code.
            fay = {**headers, "Service-Subject": "web:fay"}
            failing = c.post("/v1/loom/threads", json={"agent": agent["id"]}, headers=fay).json()["data"]
            failed = c.post(f"/v1/loom/threads/{failing['id']}/messages", headers=fay,
                            json={"content": "fail: the model is down"}).json()["data"]
            assert wait_closed(c, failed["run_id"], fay)["state"] == "failed"
        assert run["state"] == "closed" and run["cost_credits"] > 0
        server.flush_request_log()
        yield {"server": server, "ws": ws, "key": key, "agent": agent, "run": run, "thread": thread,
               "ask_run": asked["run_id"], "tool_run": quoted["run_id"], "failed_run": failed["run_id"],
               "login_path": urlparse(operator["login_url"]).path}
    finally:
        server.stop()
        if fees:
            fees.stop()


def test_the_console_signs_in_shows_every_page_with_real_data_and_changes_things(seeded, run_browser):
    s = seeded
    report = run_browser("console/console_pages.mjs", timeout=300, env={
        "HEDDLE_URL": s["server"].base_url, "LOGIN_PATH": s["login_path"], "WS": s["ws"]["id"],
        "WS_NAME": s["ws"]["name"], "KEY_SECRET": s["key"]["secret"], "RUN_ID": s["run"]["id"],
        "THREAD_ID": s["thread"]["id"], "AGENT_ID": s["agent"]["id"], "ASK_RUN_ID": s["ask_run"],
        "TOOL_RUN_ID": s["tool_run"]})

    # No script error; the only console lines are Chromium's notes on the failures the test provokes
    # (signed out 401, refused identifier, refused origin, bad agent file, unknown run).
    errors = report["console_errors"]
    assert not [e for e in errors if not e.startswith("console: Failed to load resource")], errors
    assert len(errors) <= 9, errors
    # Signed out: how to get in; the login link works once.
    assert report["signed_out_mentions_cli"]
    assert report["login_reuse_status"] == [410, 410]
    # The sign-in page looks like the console: its stylesheet, card, brand mark and accent button.
    look = report["login_look"]
    assert look["sheet"] and look["logo"] == 1
    assert look["card"] == "rgb(255, 255, 255)" and look["button"] == "rgb(43, 89, 195)", look
    # Navigation has Threads and Agents; the threads page lists the conversation by subject and agent name.
    assert report["nav"] == ["Overview", "Runs", "Threads", "Schedules", "Agents", "Feedback", "Evals", "Ledger",
                             "Request log", "Identify", "Settings"]
    # The workspace opens on its overview: four runs today, one failed with model_error.
    overview = report["overview"]
    assert overview["stats"][0].split() == ["4", "runs"] and overview["stats"][1].split() == ["1", "failed"], overview
    assert overview["codes"] == ["model_error\t1"] and overview["week_codes"] == overview["codes"], overview
    assert overview["tokens"] and overview["tokens"][0].startswith("scripted"), overview
    assert overview["phone"]["scroll_width"] <= overview["phone"]["width"] and overview["phone"]["nav_visible"] >= 4
    assert report["runs_phone"]["scroll_width"] <= report["runs_phone"]["width"], report["runs_phone"]
    # Its failure code links to the runs that failed with it.
    assert len(report["failed_list"]) == 1 and "model_error" in report["failed_list"][0], report["failed_list"]
    threads = report["threads"]
    assert threads["rows"] >= 4 and threads["current"] == "Threads"
    assert "web:alice" in threads["row"] and "Payments helper" in threads["row"] and "closed" in threads["row"]
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
    # The agent by name (and version), and the state said once.
    assert trace["agent_text"] == "Payments helper · version 1" and trace["state_badges"] == 1
    # The user's message heads the timeline; the model's input reads as a conversation, with the
    # history it was given counted (a first message: nothing earlier kept or dropped).
    assert trace["first_entry"].startswith("The user wrote") and "DEUTDEFF" in trace["first_entry"], trace
    assert trace["model_input"] >= 2 and "DEUTDEFF" in trace["model_input_user"], trace
    assert trace["history_badge"].startswith("kept 0, dropped 0 (budget "), trace
    # State changes of a run that asked and was answered, in order.
    assert report["ask_states"] == ["awaiting input", "running"], report["ask_states"]
    # A hosted tool call's two HTTP attempts: 503, then 200.
    assert report["tool_attempts"] == 2 and "503" in report["tool_attempts_text"] and "200" in report["tool_attempts_text"]
    # Conversation.
    assert "DEUTDEFF" in report["thread"]["user"] and report["thread"]["assistant"]
    assert "with Payments helper" in report["thread"]["sub"] and "agent_" not in report["thread"]["sub"]
    # Ledger: chart and a grant that moves the balance by 25.
    ledger = report["ledger"]
    assert ledger["chart"] == 1 and ledger["rows"] >= 2
    to_num = lambda t: float(t.split()[0].replace(",", ""))  # noqa: E731
    assert to_num(ledger["balance_after"]) == pytest.approx(to_num(ledger["balance_before"]) + 25)
    # The y-axis spans the balance's own range (about 100 to 125), not 0 to the top; the two
    # x labels differ even though every entry is seconds apart.
    ticks = [float(t.replace(",", "")) for t in ledger["y_ticks"]]
    assert ticks[0] >= 50 and ticks[-1] <= 150 and len(ticks) >= 3, ticks
    assert len(ledger["x_labels"]) == 2 and ledger["x_labels"][0] != ledger["x_labels"][1], ledger["x_labels"]
    # Request log filtered to client errors.
    assert report["requests"]["all"] >= 3
    assert report["requests"]["statuses_4xx"] and all(st == "400" for st in report["requests"]["statuses_4xx"])
    layout = report["requests"]["layout"]  # at 1440 px
    assert layout["table_width"] <= layout["wrap_width"] and layout["id_cut"] == 0, layout
    assert layout["max_row_height"] < 50 and layout["placeholder_fits"], layout
    # Identify: a result card, and a refused identifier in words.
    assert "Deutsche Bank" in report["identify"]["card"] and "identified" in report["identify"]["card"]
    assert "not valid" in report["identify"]["error"] and "invalid_identifier" in report["identify"]["error"]
    # Settings saved (and still there after a reload); a wildcard origin refused readably.
    assert report["settings"]["origins_after_reload"] == "https://app.example.com"
    assert report["settings"]["retention_after_reload"] == "30"
    assert "Not saved" in report["settings"]["refused"]
    # A rate limit on the server's default says which rule that is (the test server's is "off").
    assert report["settings"]["limit_hint"].startswith("In force: no limit (the server's default)")
    assert report["settings"]["limit_placeholder"] == "off"
    # Keys: the secret shown once, working, gone after a reload, dead after revoking.
    keys = report["keys"]
    assert keys["secret_prefix"] == "sk_live_" and keys["copy_button"] == 1 and keys["new_key_status"] == 200
    assert keys["secret_after_reload"] == 0 and not keys["secret_in_page"]
    assert keys["revoked_key_status"] == 401
    # Agents: created at version 1, edited into version 2, history kept; bad files refused in words.
    # The CLI's agent, made from YAML, is edited as YAML; its parameter types in words; a YAML
    # mistake is said once.
    yaml_agent = report["yaml_agent"]
    assert yaml_agent["editor"].startswith("name: Payments helper\nmodel_class: scripted\n") and "{" not in yaml_agent["editor"]
    assert "amount number, required" in yaml_agent["tools"] and '"type"' not in yaml_agent["tools"]
    assert yaml_agent["error"].count("tools.0.builtin") == 1 and "In agent.yaml:" in yaml_agent["error"], yaml_agent["error"]
    assert report["agents_nav_current"] == "Agents"
    agent = report["agent"]
    assert agent["editor_yaml"].startswith("name: Console agent\n")
    assert "version 1" in agent["created_sub"] and "version 2" in agent["after_edit_sub"]
    assert agent["versions"] == 2 and agent["instructions"] == "Second words."
    assert "First words." in agent["v1"]
    assert "does not parse" in agent["parse_error"]
    assert "Not saved" in agent["server_error"]
    assert report["connections"] == 3  # "fees" from the CLI, "payments" and "billing" from the page
    assert "MCP server" in report["mcp_connection_row"] and "http://127.0.0.1:9/mcp" in report["mcp_connection_row"]
    assert "does not exist" in report["unknown_run_error"]
    # Keyboard and landmarks.
    assert report["a11y"]["focus_after_nav"] == "page-title" and report["a11y"]["first_tab"] == "Skip to content"
    assert all(n >= 1 for n in report["a11y"]["landmarks"]) and report["a11y"]["live_region"] >= 1
    assert report["signed_out_again"]
    # Every mutation carried the CSRF header.
    assert report["mutations"] and all(m["csrf"] for m in report["mutations"]), report["mutations"]


def test_the_trace_and_the_thread_show_a_message_image(tmp_path, built_web, run_browser):
    """Issue 43: thumbnail, name, size and download link in the trace and the thread view."""
    import io

    from PIL import Image

    db = f"sqlite+aiosqlite:///{tmp_path}/console.db"
    server = LiveServer(database_url=db).start()
    try:
        ws = cli(db, "workspace", "create", "--name", "Files", "--credits", "100")
        key = cli(db, "key", "create", "--workspace", ws["id"])
        agent_file = tmp_path / "agent.yaml"
        agent_file.write_text("name: Files helper\nmodel_class: scripted\ninstructions: Read what users send.\n")
        agent = cli(db, "agent", "create", "--workspace", ws["id"], "--file", str(agent_file))
        operator = cli(db, "operator", "create", "--email", "files@example.com")
        headers = {"Authorization": f"Bearer {key['secret']}", "Service-Subject": "web:alice"}
        buf = io.BytesIO()
        Image.new("RGB", (40, 30), (20, 120, 200)).save(buf, "PNG")
        png = buf.getvalue()
        with server.client() as c:
            thread = c.post("/v1/loom/threads", json={"agent": agent["id"]}, headers=headers).json()["data"]
            up = c.post(f"/v1/loom/threads/{thread['id']}/attachments", headers=headers,
                        files={"file": ("transfer.png", png, "image/png")})
            assert up.status_code == 201, up.text
            sent = c.post(f"/v1/loom/threads/{thread['id']}/messages", headers=headers,
                          json={"content": "Why did this fail?", "attachments": [up.json()["data"]["id"]]}).json()["data"]
            run = wait_closed(c, sent["run_id"], headers)
        report = run_browser("console/console_attachments.mjs", env={
            "HEDDLE_URL": server.base_url, "LOGIN_PATH": urlparse(operator["login_url"]).path, "WS": ws["id"],
            "RUN_ID": run["id"], "THREAD_ID": thread["id"]})
    finally:
        server.stop()
    assert report["trace_first"].startswith("The user wrote") and "transfer.png" in report["trace_first"]
    for shown in (report["trace_files"], report["thread_files"]):
        [f] = shown
        assert f["name"] == "transfer.png" and f["thumb"] == 40 and f["download"] == "transfer.png", f
        assert "image/png" in f["text"] and f"{len(png)} B" in f["text"] and "40×30" in f["text"], f
    assert report["download"] == {"status": 200, "disposition": report["download"]["disposition"], "nosniff": "nosniff",
                                  "type": "image/png", "size": len(png)}
    assert report["download"]["disposition"].startswith('attachment; filename="transfer.png"')
    assert report["other_workspace"] == {"status": 404, "code": "not_found"}
    assert report["signed_out_status"] == 401
