"""A PostgreSQL database that cannot be connected to is one line in every command (issue 41).

Each kind of failure against the real local server (nothing listening, no such database, a user
the server refuses, TLS asked of a server without it), through the real entry point
(`python -m heddle`), for the commands a new user runs first: at most 3 lines on stderr (the
database line and the reason), exit status 2, the URL without its password, what to do.
"""

from __future__ import annotations

import os
import subprocess
import sys

import asyncpg
import pytest

from heddle.db.connection_errors import connection_problem
from support.net import free_port

pytestmark = [pytest.mark.postgres, pytest.mark.usefixtures("pg_database_factory")]  # skipped without PostgreSQL

HOST = "127.0.0.1:5432"


def _kinds() -> dict[str, tuple[str, str]]:
    """kind: (URL, words the line must hold)."""
    closed = free_port()
    return {
        "unreachable": (f"postgresql+asyncpg://postgres:s3cret@127.0.0.1:{closed}/heddle",
                        f"nothing accepts connections on 127.0.0.1:{closed} (connection refused): start PostgreSQL"),
        "no_database": (f"postgresql+asyncpg://postgres:s3cret@{HOST}/heddle_no_such_db",
                        "database 'heddle_no_such_db' does not exist on 127.0.0.1:5432: create it (createdb -h "
                        "127.0.0.1 -p 5432 -U postgres heddle_no_such_db)"),
        "bad_credentials": (f"postgresql+asyncpg://heddle_no_such_role:s3cret@{HOST}/postgres",
                            "the server refused user 'heddle_no_such_role' (role \"heddle_no_such_role\" does not "
                            "exist): check the user and password"),
        "tls": (f"postgresql+asyncpg://postgres:s3cret@{HOST}/postgres?ssl=require",
                "TLS with 127.0.0.1:5432 failed (PostgreSQL server at \"127.0.0.1:5432\" rejected SSL upgrade): "
                "match the URL's ssl= parameter"),
    }


KINDS = _kinds()
COMMANDS = {
    "migrate": ["migrate"],
    "workspace create": ["workspace", "create", "--name", "Acme"],
    "serve": ["serve", "--port", "0"],
    "worker": ["worker", "--port", "0"],
}


def heddle(args: list[str], url: str, cwd, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HEDDLE_")}
    return subprocess.run([sys.executable, "-m", "heddle", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**environ, "COLUMNS": "200", "HEDDLE_DATABASE_URL": url, **env})


def _check(done: subprocess.CompletedProcess, url: str, words: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) <= 3 and "Traceback" not in done.stderr, done.stderr
    shown = url.replace(":s3cret@", ":***@")
    assert lines[-1] == f"heddle: cannot connect to {shown}: " + lines[-1].split(f"{shown}: ", 1)[1], done.stderr
    assert words in lines[-1], lines[-1]
    assert "s3cret" not in done.stderr + done.stdout  # the password is never repeated back


WORKER_ENV = {"HEDDLE_EXECUTOR": "queue", "HEDDLE_EVENT_BUS": "postgres", "HEDDLE_PUSHER_APP_ID": "1",
              "HEDDLE_PUSHER_KEY": "k", "HEDDLE_PUSHER_SECRET": "s"}
# Every kind through `workspace create`, and every command with one kind each (the kinds are
# told apart in one place, heddle.db.connection_errors, whichever command meets them).
CASES = [("workspace create", kind) for kind in sorted(KINDS)] + [
    ("migrate", "no_database"), ("serve", "unreachable"), ("serve", "tls"), ("worker", "bad_credentials")]


@pytest.mark.parametrize("command,kind", CASES)
def test_each_connection_failure_is_one_line(command, kind, tmp_path):
    url, words = KINDS[kind]
    env = WORKER_ENV if command == "worker" else {}
    _check(heddle(COMMANDS[command], url, tmp_path, **env), url, words)


def test_up_and_the_json_form(tmp_path):
    url, words = KINDS["unreachable"]
    _check(heddle(["up", "--workers", "1", "--port", "0"], url, tmp_path), url, words)
    done = heddle(["workspace", "list", "--json"], url, tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    error = __import__("json").loads(done.stdout)["error"]
    assert error["code"] == "database_unreachable" and words in error["message"]
    # --database-url says the same as HEDDLE_DATABASE_URL
    flagged = heddle(["migrate", "--database-url", KINDS["no_database"][0]], "sqlite+aiosqlite:///./x.db", tmp_path)
    _check(flagged, KINDS["no_database"][0], KINDS["no_database"][1])
    assert not (tmp_path / "x.db").exists()


def test_a_wrong_password_is_named_as_such():
    """Not reproducible against the trust-auth test server: the classification, on asyncpg's own error."""
    refused = asyncpg.exceptions.InvalidPasswordError('password authentication failed for user "app"')
    said = connection_problem(refused, "postgresql+asyncpg://app:hunter2@db.internal:6432/heddle")
    assert said == ("cannot connect to postgresql+asyncpg://app:***@db.internal:6432/heddle: password "
                    "authentication failed for user 'app': check the user and password in --database-url or "
                    "HEDDLE_DATABASE_URL")
    assert connection_problem(ValueError("not a connection"), "postgresql+asyncpg://app@db/heddle") is None
    assert connection_problem(ConnectionRefusedError(111, "refused"), "sqlite+aiosqlite:///x.db") is None
