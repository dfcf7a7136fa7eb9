"""A new user's first steps (issue 15, part 6): the CLI names its database and does not create
one by accident, outbound URLs are checked when saved and refusals say how to allow them,
configuration errors are one line, `GET /` points to the docs, one access-log line per request."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from typer.testing import CliRunner

from heddle.cli.main import app
from heddle.config import get_settings
from support.processes import bound_port, spawn, wait_healthy

runner = CliRunner()


@pytest.fixture
def in_empty_folder(tmp_path, monkeypatch):
    """A folder with no heddle.db, and no HEDDLE_DATABASE_URL in the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HEDDLE_DATABASE_URL", raising=False)
    monkeypatch.delenv("HEDDLE_OUTBOUND_ALLOW_PRIVATE", raising=False)
    monkeypatch.delenv("HEDDLE_DEV", raising=False)
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def cli(*args: str) -> tuple[int, dict, str]:
    result = runner.invoke(app, [*args, "--json"])
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, (result.stdout, result.stderr)
    return result.exit_code, json.loads(lines[0]), result.stderr


def test_the_cli_refuses_to_create_a_database_it_was_not_asked_for(in_empty_folder):
    code, out, _ = cli("workspace", "create", "--name", "Acme")
    assert code == 1
    assert out["error"]["code"] == "database_missing"
    assert str(in_empty_folder / "heddle.db") in out["error"]["message"]
    assert "heddle migrate" in out["error"]["message"] and "--database-url" in out["error"]["message"]
    assert not (in_empty_folder / "heddle.db").exists()


def test_the_cli_says_which_database_it_uses(in_empty_folder):
    url = f"sqlite+aiosqlite:///{in_empty_folder / 'named.db'}"
    code, out, err = cli("migrate", "--database-url", url)
    assert code == 0 and f"SQLite file {in_empty_folder / 'named.db'} (new: creating it)" in err
    code, out, err = cli("workspace", "create", "--name", "Acme", "--database-url", url)
    assert code == 0 and out["id"].startswith("ws_")
    assert "creating" not in err
    code, out, err = cli("workspace", "show", out["id"], "--database-url", url)
    assert code == 0 and f"database: SQLite file {in_empty_folder / 'named.db'}" in err
    assert "creating" not in err


def test_heddle_migrate_creates_the_default_database(in_empty_folder):
    code, out, err = cli("migrate")
    assert code == 0 and out == {"migrated": True}
    assert (in_empty_folder / "heddle.db").exists()
    code, out, _ = cli("workspace", "create", "--name", "Acme")
    assert code == 0


def _workspace(folder) -> tuple[str, str]:
    url = f"sqlite+aiosqlite:///{folder / 'heddle.db'}"
    assert cli("migrate", "--database-url", url)[0] == 0
    code, out, _ = cli("workspace", "create", "--name", "Acme", "--database-url", url)
    assert code == 0
    return url, out["id"]


@pytest.mark.parametrize("option,value", [
    ("--mint-url", "http://127.0.0.1:8081/mint"),
    ("--mint-url", "https://10.1.2.3/mint"),
    ("--jwks-uri", "http://localhost/jwks.json"),
    ("--mint-url", "https://user:pw@example.com/mint"),
])
def test_outbound_urls_are_checked_when_saved(in_empty_folder, option, value):
    url, ws = _workspace(in_empty_folder)
    code, out, _ = cli("workspace", "update", ws, option, value, "--database-url", url)
    assert code == 1 and out["error"]["code"] == "invalid_url", out
    message = out["error"]["message"]
    assert value in message
    if "user:pw" not in value:  # what strict mode alone refuses says how to allow it
        assert "--dev" in message and "HEDDLE_OUTBOUND_ALLOW_PRIVATE" in message
    code, shown, _ = cli("workspace", "show", ws, "--database-url", url)
    assert shown["mint_url"] is None and shown["jwks_uri"] is None  # nothing was saved


def test_dev_accepts_local_urls_and_public_https_is_fine(in_empty_folder):
    url, ws = _workspace(in_empty_folder)
    code, out, _ = cli("workspace", "update", ws, "--mint-url", "http://127.0.0.1:8081/mint", "--dev",
                       "--database-url", url)
    assert code == 0 and out["mint_url"] == "http://127.0.0.1:8081/mint"
    code, out, _ = cli("workspace", "update", ws, "--jwks-uri", "https://auth.example.com/jwks.json",
                       "--database-url", url)
    assert code == 0 and out["jwks_uri"] == "https://auth.example.com/jwks.json"
    code, out, _ = cli("connection", "create", "--workspace", ws, "--name", "bank", "--base-url",
                       "http://192.168.1.5:9000", "--database-url", url)
    assert code == 1 and "--dev" in out["error"]["message"]
    code, out, _ = cli("connection", "create", "--workspace", ws, "--name", "bank", "--base-url",
                       "https://tools.example.com", "--database-url", url)
    assert code == 0 and out["base_url"] == "https://tools.example.com"


async def test_a_refused_outbound_call_says_how_to_allow_it():
    from heddle.outbound.safe_http import DestinationRefused, build_outbound_client

    async with build_outbound_client(allow_private=False, connect_timeout=1, timeout=2,
                                     max_response_bytes=4096) as client:
        for target in ("http://127.0.0.1:9/tools/x", "https://127.0.0.1:9/tools/x"):
            with pytest.raises(DestinationRefused) as caught:
                await client.post(target, content=b"{}")
            assert "heddle serve --dev" in str(caught.value)
            assert "HEDDLE_OUTBOUND_ALLOW_PRIVATE=true" in str(caught.value)


def test_root_points_to_the_docs(http):
    resp = http.get("/")
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["docs"] == "/docs" and data["openapi"] == "/openapi.json"
    assert http.get(data["docs"]).status_code == 200


def _heddle(*args: str, env: dict[str, str], cwd, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "heddle", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEDDLE_")}
    env.update(extra)
    return env


@pytest.mark.parametrize("variable,value,expected", [
    ("HEDDLE_MODEL_CLASSES", '{"gpt": {"provider": "opnai", "model": "x"}}', "HEDDLE_MODEL_CLASSES"),
    ("HEDDLE_MODEL_CLASSES", "{not json", "not valid JSON"),
    ("HEDDLE_PORT", "eighty", "HEDDLE_PORT"),
    ("HEDDLE_REALTIME", "maybe", "HEDDLE_REALTIME"),
])
def test_configuration_errors_are_one_line(in_empty_folder, monkeypatch, capsys, variable, value, expected):
    """`heddle serve` through the console script's own entry point, in this process: the bad
    value is caught before uvicorn starts."""
    from heddle.cli.main import main

    monkeypatch.setenv(variable, value)
    monkeypatch.setattr(sys, "argv", ["heddle", "serve", "--database-url",
                                      f"sqlite+aiosqlite:///{in_empty_folder / 'h.db'}"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("heddle: configuration error: ") and expected in lines[0]


def test_a_bad_setting_is_one_line_for_control_commands_too(in_empty_folder, monkeypatch, capsys):
    from heddle.cli.main import main

    monkeypatch.setenv("HEDDLE_MAX_BODY_BYTES", "lots")
    monkeypatch.setattr(sys, "argv", ["heddle", "workspace", "show", "ws_x"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("heddle: configuration error: HEDDLE_MAX_BODY_BYTES") and "\n" not in err


@pytest.mark.slow
def test_serve_names_its_database_and_logs_one_line_per_request(tmp_path):
    db = tmp_path / "served.db"
    proc, port_file = spawn(["serve", "--database-url", f"sqlite+aiosqlite:///{db}"], {"HEDDLE_LOG_JSON": "true"},
                            environ=_env(), cwd=tmp_path, stderr=subprocess.PIPE, text=True)

    def output() -> str:
        proc.wait(10)
        return proc.stderr.read()

    try:
        port = bound_port(proc, port_file, output)  # imports alone take ~20 s on a busy 2-core machine
        wait_healthy(proc, port, output)
        assert httpx.get(f"http://127.0.0.1:{port}/v1/nothing-here", timeout=5).status_code == 404
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    assert f"SQLite file {db} (new: creating it)" in stderr
    events = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    access = [e for e in events if e.get("event") == "request"]
    assert {(e["method"], e["path"], e["status"]) for e in access} >= {
        ("GET", "/v1/nothing-here", 404), ("GET", "/", 200), ("GET", "/healthz", 200)}
    assert all(e["request_id"] and isinstance(e["ms"], float) for e in access)
    missing = [e for e in access if e["path"] == "/v1/nothing-here"][0]
    assert missing["route"] == "unmatched"
