"""First contact II (issue 30): a mistake a new user makes gets one line with the fix in it.

Database URLs that cannot work, a SQLite file name with a typo, a misspelt built-in tool, a
command without a help line, a table cut at 80 columns, `heddle demo` beside a running server,
a log redirected to a file, an empty key in the Python client.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import click
import httpx
import pytest
import typer
from typer.testing import CliRunner

from heddle.cli.main import app
from heddle.client import Heddle
from heddle.config import get_settings
from heddle.db.urls import DatabaseUrlError, check_database_url
from heddle.loom.agent_file import AgentFileError, parse_agent_file
from support.net import free_port
from support.processes import serve_in

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEDDLE_")}
    return {**env, "COLUMNS": "200", **extra}


def heddle(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """The real `heddle` entry point (python -m heddle), as a person runs it."""
    return subprocess.run([sys.executable, "-m", "heddle", *args], cwd=cwd, env=_env(**env),
                          capture_output=True, text=True, timeout=120)


BAD_URLS = [
    ("postgres://app:s3cret@db.internal:5432/heddle", "use postgresql+asyncpg://app:***@db.internal:5432/heddle"),
    ("postgresql://app@db.internal/heddle", "use postgresql+asyncpg://app@db.internal/heddle"),
    ("postgresql+psycopg://app@db.internal/heddle", "use postgresql+asyncpg://app@db.internal/heddle"),
    ("sqlite:///x.db", "use sqlite+aiosqlite:///x.db"),
    ("not a url", "write one like sqlite+aiosqlite:///./heddle.db"),
    ("mysql://root@localhost/heddle", "Heddle runs on SQLite or PostgreSQL, not 'mysql'"),
]


@pytest.mark.parametrize("url,fix", BAD_URLS)
def test_a_database_url_that_cannot_work_is_one_line_with_the_fix(tmp_path, url, fix):
    done = heddle("workspace", "list", cwd=tmp_path, HEDDLE_DATABASE_URL=url)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("heddle: configuration error: HEDDLE_DATABASE_URL: ") and fix in lines[0]
    assert "s3cret" not in done.stderr  # a password is never repeated back
    assert done.stdout == "" and not list(tmp_path.iterdir())


def test_the_same_check_for_the_flag_and_for_serve(tmp_path):
    done = heddle("workspace", "list", "--database-url", "postgres://app:s3cret@db/heddle", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert "--database-url: a plain postgres:// URL" in done.stderr and "s3cret" not in done.stderr
    done = heddle("serve", "--port", "0", "--database-url", "sqlite:///x.db", cwd=tmp_path)
    assert done.returncode == 2 and "use sqlite+aiosqlite:///x.db" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "x.db").exists()


def test_postgresql_without_its_driver_says_which_extra_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "asyncpg" else real(name, *a))
    with pytest.raises(DatabaseUrlError, match=r"pip install 'heddle\[postgres\]'"):
        check_database_url("postgresql+asyncpg://app@db/heddle")
    assert check_database_url("sqlite+aiosqlite:///./heddle.db") == "sqlite+aiosqlite:///./heddle.db"


def test_a_typo_in_a_sqlite_file_name_is_refused_not_created(tmp_path):
    assert heddle("migrate", cwd=tmp_path).returncode == 0
    typo = f"sqlite+aiosqlite:///{tmp_path / 'hedle.db'}"
    for done in (heddle("workspace", "list", "--database-url", typo, cwd=tmp_path),
                 heddle("workspace", "list", cwd=tmp_path, HEDDLE_DATABASE_URL=typo)):
        assert done.returncode == 1, done.stderr
        assert f"no Heddle database at {tmp_path / 'hedle.db'}" in done.stderr
        assert "check the file name" in done.stderr and f"heddle migrate --database-url {typo}" in done.stderr
        assert not (tmp_path / "hedle.db").exists()
    assert heddle("workspace", "list", "--database-url", f"sqlite+aiosqlite:///{tmp_path / 'heddle.db'}",
                  cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("tools,message", [
    ("  - builtin: identfy\n", "agent.yaml: tools.0.builtin: Input should be 'identify' (got 'identfy')"),
    ("  - builtin: identify\n    risk: high\n", "agent.yaml: tools.0.risk: Extra inputs are not permitted"),
    ("  - name: pay\n    description: Pay\n    path: /pay\n    approve_when: {above: {amount: 1}}\n",
     "agent.yaml: tools.0: approve_when needs interaction: approve"),
    ("  - name: pay\n    description: Pay\n    path: /pay\n    risk: hgh\n",
     "agent.yaml: tools.0.risk: Input should be 'low', 'medium' or 'high' (got 'hgh')"),
    ("  - 3\n", "agent.yaml: tools.0: each tool is a mapping"),
])
def test_an_agent_file_mistake_names_the_field_in_the_authors_words(tools, message):
    with pytest.raises(AgentFileError) as caught:
        parse_agent_file(f"name: a\nmodel_class: scripted\ntools:\n{tools}")
    text = str(caught.value)
    assert text.startswith(message), text
    assert "function-after" not in text and "HostedTool" not in text and "BuiltinTool" not in text


def _commands(group: click.Group, prefix: str = "heddle"):
    for name, command in group.commands.items():
        yield f"{prefix} {name}", command
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix} {name}")


def test_every_command_and_option_has_a_help_line():
    missing = []
    for path, command in _commands(typer.main.get_command(app)):
        if not (command.help or command.short_help):
            missing.append(path)
        for param in command.params:
            if isinstance(param, click.Option) and not param.help and "--help" not in param.opts:
                missing.append(f"{path} {param.opts[0]}")
            if isinstance(param, click.Argument) and not getattr(param, "help", None):
                missing.append(f"{path} {param.name.upper()}")
    assert missing == []


def test_the_ledger_fits_80_columns_without_cutting_a_value(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HEDDLE_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        assert runner.invoke(app, ["migrate"]).exit_code == 0
        created = runner.invoke(app, ["workspace", "create", "--name", "A", "--credits", "1000", "--json"])
        workspace = created.stdout.strip().split('"id": "')[1].split('"')[0]
        assert runner.invoke(app, ["credits", "grant", workspace, "12.345678"]).exit_code == 0
        shown = runner.invoke(app, ["credits", "show", workspace], env={"COLUMNS": "80"}, terminal_width=80)
    finally:
        get_settings.cache_clear()
    assert shown.exit_code == 0, shown.output
    assert "…" not in shown.stdout and max(len(line) for line in shown.stdout.splitlines()) <= 80
    assert "12.345678" in shown.stdout and "1012.345678" in shown.stdout


def test_demo_beside_a_running_server_and_a_plain_log_when_redirected(tmp_path):
    """One server start for both: `heddle demo` sees it is up (and on which port), and its log,
    a pipe here, carries no colour codes even in --dev's readable format."""
    proc, port, output = serve_in(tmp_path, _env(), ["--dev"])
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/v1/nothing-here", timeout=5).status_code == 404
        done = heddle("demo", cwd=tmp_path, HEDDLE_PORT=str(port))
        assert done.returncode == 0, done.stderr
        assert f"Heddle is already running at http://127.0.0.1:{port}" in done.stdout
        assert "heddle serve --dev   (then" not in done.stdout
        assert f"curl -s http://127.0.0.1:{port}/v1/loom/threads" in done.stdout
        assert "localhost:8080" not in done.stdout
    finally:
        proc.terminate()
        _, log = proc.communicate(timeout=30)
    assert "request" in log and "/v1/nothing-here" in log
    assert "\x1b[" not in log


def test_demo_without_a_server_says_to_start_one(tmp_path):
    assert heddle("migrate", cwd=tmp_path).returncode == 0
    port = free_port()
    done = heddle("demo", cwd=tmp_path, HEDDLE_PORT=str(port))
    assert done.returncode == 0, done.stderr
    assert f"Start Heddle (another terminal):  heddle serve --dev   (then at http://127.0.0.1:{port})" in done.stdout


@pytest.mark.parametrize("kwargs", [{"api_key": ""}, {"api_key": "  "}, {"token": ""}])
def test_the_python_client_refuses_an_empty_key_when_made(kwargs):
    with pytest.raises(ValueError, match="is empty: pass the workspace key"):
        Heddle("http://127.0.0.1:1", **kwargs)


def test_the_sqlite_lock_file_is_ignored_by_git():
    done = subprocess.run(["git", "check-ignore", "-q", "heddle.db.lock"], cwd=REPO)
    assert done.returncode == 0


def test_a_self_hosted_pusher_server_is_published_to_browsers_under_its_public_name(tmp_path):
    """Heddle publishes to a Pusher-protocol server (soketi) on an internal address; browsers are
    told the public one (HEDDLE_REALTIME_PUBLIC_*), never the internal host."""
    from support.server import LiveServer
    from support.tenants import make_tenant

    internal = {"realtime": "pusher", "pusher_app_id": "4242", "pusher_key": "app-key", "pusher_secret": "s",
                "pusher_host": "127.0.0.1", "pusher_port": 6001, "pusher_ssl": False}
    public = {"realtime_public_host": "rt.example.com", "realtime_public_port": 443, "realtime_force_tls": True}
    expected = {(): ("127.0.0.1", 6001, False), (("public", True),): ("rt.example.com", 443, True)}
    for with_public, (host, port, tls) in expected.items():
        settings = {**internal, **(public if with_public else {})}
        # A file of its own, as every other live server has (an in-memory database is one shared
        # connection, which the server's start-up tasks and the tenant's creation once raced on).
        db_file = tmp_path / f"rt{len(with_public)}.db"
        live = LiveServer(database_url=f"sqlite+aiosqlite:///{db_file}", **settings).start()
        try:
            tenant = make_tenant(live)
            with live.client() as http:
                got = http.get("/v1/loom/realtime/config", headers=tenant.headers()).json()["data"]
        finally:
            live.stop()
        assert (got["ws_host"], got["ws_port"], got["force_tls"], got["key"]) == (host, port, tls, "app-key")


def test_a_pusher_app_id_that_is_not_a_number_is_one_line(tmp_path):
    done = heddle("serve", "--port", "0", cwd=tmp_path, HEDDLE_REALTIME="pusher",
                  HEDDLE_PUSHER_APP_ID="app-id", HEDDLE_PUSHER_KEY="app-key", HEDDLE_PUSHER_SECRET="app-secret")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == ("heddle: configuration error: HEDDLE_PUSHER_APP_ID: must be digits with "
                                   "HEDDLE_REALTIME=pusher (got 'app-id'); for soketi set SOKETI_DEFAULT_APP_ID to "
                                   "a number too")
