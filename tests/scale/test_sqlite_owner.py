"""One server per SQLite file: a second `heddle serve` on a file a live server holds refuses to start."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import pytest

from heddle.db import sqlite_owner
from support.processes import bound_port, spawn, wait_healthy

pytestmark = pytest.mark.slow


def _start(db_url: str) -> tuple[subprocess.Popen, str]:
    """`heddle serve` on a port it picks; the process and its port file."""
    return spawn(["serve"], {"HEDDLE_DATABASE_URL": db_url, "HEDDLE_LOG_LEVEL": "WARNING"},
                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_healthy(proc: subprocess.Popen, port_file: str) -> int:
    def output() -> str:
        proc.wait(10)
        return proc.stderr.read().decode()

    port = bound_port(proc, port_file, output)
    wait_healthy(proc, port, output)
    return port


def test_second_server_on_a_held_file_refuses_and_a_crash_releases_it(tmp_path):
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'one.db'}"
    first, first_file = _start(db_url)
    try:
        first_port = _wait_healthy(first, first_file)
        second, _ = _start(db_url)
        _, err = second.communicate(timeout=30)
        assert second.returncode == 1
        lines = err.decode().strip().splitlines()
        assert len(lines) == 1, lines
        assert "another Heddle server" in lines[0] and f"pid {first.pid}" in lines[0]
        assert str(tmp_path / "one.db") in lines[0]
        assert httpx.get(f"http://127.0.0.1:{first_port}/healthz").status_code == 200  # untouched

        first.send_signal(signal.SIGKILL)  # a crash: the kernel drops the lock with the process
        first.wait(10)
        third, third_file = _start(db_url)
        try:
            _wait_healthy(third, third_file)
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
