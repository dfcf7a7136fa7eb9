"""One server per SQLite file: a second `heddle serve` on a file a live server holds refuses to start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from heddle.db import sqlite_owner
from support.net import free_port

pytestmark = pytest.mark.slow


def _start(db_url: str, port: int) -> subprocess.Popen:
    env = {**os.environ, "HEDDLE_DATABASE_URL": db_url, "HEDDLE_LOG_LEVEL": "WARNING"}
    return subprocess.Popen([sys.executable, "-m", "heddle", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_healthy(proc: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.1)
    raise AssertionError("server did not come up")


def test_second_server_on_a_held_file_refuses_and_a_crash_releases_it(tmp_path):
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'one.db'}"
    first_port, second_port = free_port(), free_port()
    first = _start(db_url, first_port)
    try:
        _wait_healthy(first, first_port)
        second = _start(db_url, second_port)
        _, err = second.communicate(timeout=30)
        assert second.returncode == 1
        lines = err.decode().strip().splitlines()
        assert len(lines) == 1, lines
        assert "another Heddle server" in lines[0] and f"pid {first.pid}" in lines[0]
        assert str(tmp_path / "one.db") in lines[0]
        assert httpx.get(f"http://127.0.0.1:{first_port}/healthz").status_code == 200  # untouched

        first.send_signal(signal.SIGKILL)  # a crash: the kernel drops the lock with the process
        first.wait(10)
        third = _start(db_url, second_port)
        try:
            _wait_healthy(third, second_port)
        finally:
            third.terminate()
            third.wait(15)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(10)


def test_the_lock_is_reentrant_in_one_process_and_released(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    a = sqlite_owner.hold(url)
    b = sqlite_owner.hold(url)
    assert a == b == str((tmp_path / "x.db").resolve())
    sqlite_owner.release(a)
    # still held once: another process would be refused
    probe = subprocess.run([sys.executable, "-c", f"from heddle.db import sqlite_owner; sqlite_owner.hold({url!r})"],
                           capture_output=True, text=True, timeout=30)
    assert probe.returncode != 0 and "DatabaseInUse" in probe.stderr
    sqlite_owner.release(b)
    probe = subprocess.run([sys.executable, "-c", f"from heddle.db import sqlite_owner; sqlite_owner.hold({url!r})"],
                           capture_output=True, text=True, timeout=30)
    assert probe.returncode == 0, probe.stderr
    assert sqlite_owner.hold("postgresql+asyncpg://x/y") is None
    assert sqlite_owner.hold("sqlite+aiosqlite:///:memory:") is None
