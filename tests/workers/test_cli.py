"""`heddle up`, and the clear refusals of `heddle serve` / `heddle worker` (real processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from support.net import free_port


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
    port = free_port()
    while any(_busy(p) for p in (port + 1, port + 2)):
        port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "heddle", "up", "--workers", "2", "--port", str(port),
                             "--database-url", pg_url], env={**os.environ, "HEDDLE_LOG_LEVEL": "WARNING"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        up = set()
        deadline = time.monotonic() + 180
        while len(up) < 3 and time.monotonic() < deadline and proc.poll() is None:
            for p in (port, port + 1, port + 2):
                try:
                    if httpx.get(f"http://127.0.0.1:{p}/healthz", timeout=1).status_code == 200:
                        up.add(p)
                except httpx.HTTPError:
                    pass
            time.sleep(0.2)
        assert up == {port, port + 1, port + 2}, proc.stdout.read() if proc.poll() is not None else up
        roles = [httpx.get(f"http://127.0.0.1:{p}/healthz").json()["data"].get("role") for p in (port + 1, port + 2)]
        assert roles == ["worker", "worker"]
        proc.send_signal(signal.SIGINT)
        code = proc.wait(60)
        assert code == 0, proc.stdout.read()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()


def _busy(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
