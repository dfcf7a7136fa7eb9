"""The CLI and the console call one service layer (heddle.control): same data, same refusals.
Also `heddle operator …` and `heddle agent list/show/update`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from heddle.cli.main import app
from heddle.config import get_settings
from support.console import Console, expect_error

runner = CliRunner()
AGENT_YAML = "name: Helper\nmodel_class: scripted\ninstructions: One.\ntools:\n  - builtin: identify\n"


def cli(server, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    get_settings.cache_clear()  # each `heddle` run is a new process that reads HEDDLE_* afresh
    try:
        result = runner.invoke(app, [*args, "--json", "--database-url", server.settings.database_url], env=env)
    finally:
        get_settings.cache_clear()
    lines = result.stdout.strip().splitlines()
    assert lines, result.output
    return result.exit_code, json.loads(lines[-1])


def test_operator_commands_and_the_link_they_print(server):
    env = {"HEDDLE_PUBLIC_URL": server.base_url}
    code, op = cli(server, "operator", "create", "--email", "Cli.Op@Example.com", env=env)
    assert code == 0 and set(op) == {"id", "email", "login_url"} and op["id"].startswith("op_")
    assert op["login_url"].startswith(server.base_url + "/console/login/")
    code, dup = cli(server, "operator", "create", "--email", "cli.op@example.com", env=env)
    assert code == 1 and "exists" in dup["error"]["message"]  # unique whatever the case
    code, bad = cli(server, "operator", "create", "--email", "not-an-email", env=env)
    assert code == 1 and bad["error"]["code"] == "invalid_argument"

    browser = Console(server)
    try:
        browser.sign_in(op["login_url"])
        assert browser.data("GET", "/me")["email"] == "Cli.Op@Example.com"
        code, again = cli(server, "operator", "login-link", "--email", "CLI.OP@example.com", env=env)
        assert code == 0 and again["login_url"] != op["login_url"] and again["id"] == op["id"]
        code, listed = cli(server, "operator", "list")
        assert code == 0 and any(o["id"] == op["id"] and o["disabled_at"] is None for o in listed["items"])
        code, disabled = cli(server, "operator", "disable", "--email", "cli.op@example.com")
        assert code == 0 and disabled["sessions_ended"] == 1 and disabled["disabled_at"]
        expect_error(browser.get("/me"), 401, "console_unauthenticated")
        assert browser.http.get(again["login_url"].removeprefix(server.base_url)).status_code == 410
        code, refused = cli(server, "operator", "login-link", "--email", "cli.op@example.com", env=env)
        assert code == 1 and "disabled" in refused["error"]["message"]
        code, missing = cli(server, "operator", "login-link", "--email", "ghost@example.com", env=env)
        assert code == 1 and missing["error"]["code"] == "not_found"
    finally:
        browser.close()


def test_cli_and_console_show_the_same_workspace(server, console):
    code, ws = cli(server, "workspace", "create", "--name", "Parity", "--credits", "3")
    assert code == 0 and set(ws) == {"id", "name", "balance_credits"}
    code, _ = cli(server, "key", "create", "--workspace", ws["id"], "--mode", "test")
    assert code == 0
    console.data("POST", f"/workspaces/{ws['id']}/connections", 201,
                 json={"name": "tools", "base_url": "https://tools.example.com"})
    code, shown = cli(server, "workspace", "show", ws["id"])
    # The console's answer is the CLI's, plus the rate limits in force (the console shows them).
    in_console = console.data("GET", f"/workspaces/{ws['id']}")
    assert in_console.pop("rate_limits")["per_key"]["is_default"] is True
    assert code == 0 and shown == in_console
    code, credits = cli(server, "credits", "show", ws["id"])
    assert code == 0 and credits == console.data("GET", f"/workspaces/{ws['id']}/credits")
    code, listed = cli(server, "workspace", "list")
    assert code == 0 and listed == console.data("GET", "/workspaces")


def test_cli_and_console_refuse_the_same_input(server, console):
    ws = console.data("POST", "/workspaces", 201, json={"name": "Strict"})["id"]
    code, out = cli(server, "workspace", "update", ws, "--allowed-origin", "https://*.example.com")
    err = expect_error(console.patch(f"/workspaces/{ws}", json={"allowed_origins": ["https://*.example.com"]}),
                       400, "invalid_request")
    assert code == 1 and out["error"]["message"] == err["message"]
    code, out = cli(server, "connection", "create", "--workspace", ws, "--name", "x", "--base-url", "ftp://x")
    err = expect_error(console.post(f"/workspaces/{ws}/connections", json={"name": "x", "base_url": "ftp://x"}),
                       400, "invalid_request")
    assert code == 1 and out["error"]["code"] == "invalid_url" and err["details"][0]["type"] == "invalid_url"
    code, out = cli(server, "connection", "create", "--workspace", ws, "--name", "x", "--kind", "grpc",
                    "--base-url", "https://x.example.com")
    assert code == 1 and out["error"]["code"] == "invalid_argument" and "kind" in out["error"]["message"]
    code, out = cli(server, "connection", "create", "--workspace", ws, "--name", "billing", "--kind", "mcp",
                    "--base-url", "https://billing.example.com/mcp")
    assert code == 0 and out["kind"] == "mcp"
    assert console.data("GET", f"/workspaces/{ws}/connections")["items"][0]["kind"] == "mcp"
    code, out = cli(server, "workspace", "show", "ws_missing")
    expect_error(console.get("/workspaces/ws_missing"), 404, "not_found")
    assert code == 1 and out["error"]["code"] == "not_found"


def test_agent_commands_make_versions_the_console_sees(server, console, tmp_path):
    ws = console.data("POST", "/workspaces", 201, json={"name": "CLI agents"})["id"]
    first = tmp_path / "agent.yaml"
    first.write_text(AGENT_YAML)
    code, agent = cli(server, "agent", "create", "--workspace", ws, "--file", str(first))
    assert code == 0 and agent["version"] == 1 and agent["name"] == "Helper"
    second = tmp_path / "agent2.yaml"
    second.write_text(AGENT_YAML.replace("One.", "Two."))
    code, updated = cli(server, "agent", "update", agent["id"], "--file", str(second))
    assert code == 0 and updated["version"] == 2 and updated["instructions"] == "Two."
    code, shown = cli(server, "agent", "show", agent["id"])
    # The console's answer is the CLI's, plus the agent file as YAML (what its editor shows).
    in_console = console.data("GET", f"/workspaces/{ws}/agents/{agent['id']}")
    assert in_console.pop("yaml").startswith("name: Helper\n")
    assert code == 0 and shown == in_console
    assert [(v["version"], v["created_by"]) for v in shown["versions"]] == [(2, "cli"), (1, "cli")]
    code, v1 = cli(server, "agent", "show", agent["id"], "--version", "1")
    assert code == 0 and v1["instructions"] == "One."
    code, listed = cli(server, "agent", "list", "--workspace", ws)
    assert code == 0 and listed == console.data("GET", f"/workspaces/{ws}/agents")
    bad = tmp_path / "bad.yaml"
    bad.write_text(AGENT_YAML.replace("scripted", "nonexistent"))
    code, out = cli(server, "agent", "update", agent["id"], "--file", str(bad))
    assert code == 1 and "model_class" in out["error"]["message"]
    code, out = cli(server, "agent", "update", "agent_missing", "--file", str(second))
    assert code == 1 and out["error"]["code"] == "not_found"
    code, out = cli(server, "agent", "show", agent["id"], "--version", "9")
    assert code == 1 and out["error"]["code"] == "not_found"


def test_operator_links_use_the_configured_public_url(server):
    def link(*extra: str, env: dict[str, str]) -> tuple[str, str]:
        get_settings.cache_clear()
        try:
            result = runner.invoke(app, ["operator", "create", "--email", f"u{len(extra)}{len(env)}@example.com",
                                         *extra, "--json", "--database-url", server.settings.database_url], env=env)
        finally:
            get_settings.cache_clear()
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout.strip().splitlines()[-1])["login_url"], result.stderr

    url, warning = link("--public-url", "https://heddle.example.com/", env={"HEDDLE_PUBLIC_URL": ""})
    assert url.startswith("https://heddle.example.com/console/login/") and "HEDDLE_PUBLIC_URL is not set" not in warning
    url, warning = link(env={"HEDDLE_PUBLIC_URL": "https://ops.example.com:8443"})
    assert url.startswith("https://ops.example.com:8443/console/login/") and "HEDDLE_PUBLIC_URL is not set" not in warning
    # nothing configured: the default address, and a warning that says how to fix it
    url, warning = link(env={"HEDDLE_PUBLIC_URL": "", "HEDDLE_PORT": "9000"})
    assert url.startswith("http://127.0.0.1:9000/console/login/")
    assert "HEDDLE_PUBLIC_URL is not set" in warning and "--public-url" in warning
    result = runner.invoke(app, ["operator", "create", "--email", "bad@example.com", "--public-url", "ftp://x",
                                 "--database-url", server.settings.database_url])
    assert result.exit_code != 0 and "--public-url" in result.output


def test_an_unknown_model_class_says_it_was_checked_in_this_shell(server, tmp_path):
    """The server may know `gpt` (its own HEDDLE_MODEL_CLASSES); this shell does not (issue 41)."""
    ws = cli(server, "workspace", "create", "--name", "Classes")[1]["id"]
    gpt = tmp_path / "gpt.yaml"
    gpt.write_text(AGENT_YAML.replace("scripted", "gpt"))
    code, out = cli(server, "agent", "create", "--workspace", ws, "--file", str(gpt), env={"HEDDLE_MODEL_CLASSES": ""})
    message = out["error"]["message"]
    assert code == 1 and message.startswith(f"{gpt}: model_class: unknown model class 'gpt': HEDDLE_MODEL_CLASSES "
                                            "is not set in this shell, so only scripted is known."), message
    assert "not a running server's: run it with the server's HEDDLE_MODEL_CLASSES set" in message
    local = '{"local": {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "x"}}'
    code, out = cli(server, "agent", "create", "--workspace", ws, "--file", str(gpt),
                    env={"HEDDLE_MODEL_CLASSES": local})
    assert code == 1 and "HEDDLE_MODEL_CLASSES in this shell configures local, scripted" in out["error"]["message"]
    code, made = cli(server, "agent", "create", "--workspace", ws, "--file", str(gpt),
                     env={"HEDDLE_MODEL_CLASSES": local.replace('"local"', '"gpt"')})
    assert code == 0 and made["model_class"] == "gpt"  # known here: created (the server decides at run time)
