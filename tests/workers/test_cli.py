"""`heddle up`, and the clear refusals of `heddle serve` / `heddle worker` (real processes)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from support.net import port_block


def _run(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "heddle", *args], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize("args, env, message", [
    (["serve"], {"HEDDLE_EXECUTOR": "queue"}, "HEDDLE_EXECUTOR=queue needs PostgreSQL"),
    (["worker"], {"HEDDLE_EXECUTOR": "queue"}, "HEDDLE_EXECUTOR=queue needs PostgreSQL"),
    (["worker"], {}, "`heddle worker` executes queued runs: set HEDDLE_EXECUTOR=queue"),
    (["serve"], {"HEDDLE_EXECUTOR": "queue", "HEDDLE_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:1/x",
                 "HEDDLE_EVENT_BUS": "postgres"}, "set HEDDLE_PUSHER_APP_ID, HEDDLE_PUSHER_KEY, HEDDLE_PUSHER_SECRET"),
])
def test_a_deployment_that_cannot_work_refuses_to_start_and_says_why(args, env, message, tmp_path):
    env = {"HEDDLE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'h.db'}", "HEDDLE_PUSHER_APP_ID": "",
           "HEDDLE_PUSHER_KEY": "", "HEDDLE_PUSHER_SECRET": "", "HEDDLE_EVENT_BUS": "memory", **env}
    done = _run(args, env)
    assert done.returncode == 2
    assert "refusing to start" in done.stderr and message in done.stderr
    assert not (tmp_path / "h.db").exists()  # refused before touching the database


@pytest.mark.slow
@pytest.mark.postgres
def test_heddle_up_starts_the_api_and_two_workers_and_stops_them_on_ctrl_c(pg_url):
    # --port 0: every child binds a port the system picks and reports it; `heddle up` prints them
    # once all three answer /healthz (their own start-up wait, --start-seconds).
    proc = subprocess.Popen([sys.executable, "-m", "heddle", "up", "--workers", "2", "--port", "0",
                             "--start-seconds", "180", "--database-url", pg_url],
                            env={**os.environ, "HEDDLE_LOG_LEVEL": "WARNING"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = []
        for line in proc.stdout:  # `heddle up` ends on its own if a child fails or is late
            seen.append(line)
            if ready := UP_LINE.search(line):
                break
        assert ready, "".join(seen) + (proc.stdout.read() if proc.wait(30) is not None else "")
        api, workers = int(ready["api"]), [int(p) for p in ready["workers"].split(", ")]
        assert httpx.get(f"http://127.0.0.1:{api}/healthz").status_code == 200
        roles = [httpx.get(f"http://127.0.0.1:{p}/healthz").json()["data"].get("role") for p in workers]
        assert roles == ["worker", "worker"]
        proc.send_signal(signal.SIGINT)
        code = proc.wait(60)
        rest = proc.stdout.read()
        assert code == 0, "".join(seen) + rest
        assert "Future exception was never retrieved" not in rest and "error connecting" not in rest, rest
    finally:
        if proc.poll() is None:
            proc.kill()


UP_LINE = re.compile(r"heddle up: API on http://127\.0\.0\.1:(?P<api>\d+), 2 worker\(s\) "
                     r"with health on port\(s\) (?P<workers>[\d, ]+);")


@pytest.fixture
def held_port():
    """A port another socket listens on for the whole test; the two below it are free (see port_block)."""
    with socket.create_server(("127.0.0.1", port_block(3) + 2)) as sock:
        yield sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_taken_port_refuses_to_start_in_one_line(command, held_port, tmp_path, request):
    env = {"HEDDLE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'h.db'}"}
    if command == "worker":  # a worker that would otherwise start: queue mode on PostgreSQL, logging
        env = {**request.getfixturevalue("deployment_env"), "HEDDLE_LOG_LEVEL": "INFO"}
    started = time.monotonic()
    done = _run([command, "--port", str(held_port)], env, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (f"heddle {command}: refusing to start: cannot listen on "
                                   f"127.0.0.1:{held_port}: Address already in use"), done.stderr
    assert done.stdout == ""
    assert time.monotonic() - started < 60
    assert not (tmp_path / "h.db").exists()  # refused before touching the database


@pytest.mark.slow
@pytest.mark.postgres
def test_heddle_up_stops_everything_and_names_the_child_that_cannot_bind(pg_url, held_port):
    # The API on held_port - 2, the workers on held_port - 1 and held_port: worker 2 cannot bind.
    done = _run(["up", "--workers", "2", "--port", str(held_port - 2), "--database-url", pg_url],
                {"HEDDLE_LOG_LEVEL": "WARNING"}, timeout=180)
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"heddle up: worker 2 exited with code 1: heddle worker: refusing to start: cannot listen on "
                    f"127.0.0.1:{held_port}: Address already in use; stopped the others."), done.stderr
    for port in (held_port - 2, held_port - 1):  # the others are gone with it
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)


@pytest.mark.slow
@pytest.mark.postgres
def test_heddle_up_reports_a_child_not_healthy_within_its_start_up_time(pg_url):
    done = _run(["up", "--workers", "1", "--port", "0", "--start-seconds", "1", "--database-url", pg_url],
                {"HEDDLE_LOG_LEVEL": "WARNING"}, timeout=180)  # importing the service alone takes longer
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"heddle up: (api|worker 1) was not healthy within 1 s \(its port: (\d+|not bound yet)\); "
                        r"stopped the others\.", last), done.stderr


@pytest.mark.slow
@pytest.mark.postgres
def test_a_worker_stopped_by_sigterm_exits_cleanly(deployment_env, tmp_path):
    from workers.procs import start

    worker = start("worker", {**deployment_env, "HEDDLE_LOG_LEVEL": "INFO"}, tmp_path).wait_healthy()
    assert worker.terminate() == 0, worker.log()
    log = worker.log()
    assert '"worker_stopped"' in log, log
    for noise in ("Future exception was never retrieved", "error connecting", "Traceback"):
        assert noise not in log, log
