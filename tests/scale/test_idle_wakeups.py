"""An idle server sleeps: how often `heddle serve` wakes with nothing to do, and that uvicorn's
once-a-second upkeep does not delay its stop (heddle/serving.py `QuietServer`).

The budget is a count (the process's voluntary context switches), not CPU: a process woken from
idle costs under a millisecond on a quiet machine and up to about 10 ms on a small, busy virtual
machine, and the same idle server measured anywhere from 1% to 20% of a core with the machine's
load (docs/operations.md, "Idle wake-ups"). The PostgreSQL layout's budget, API and worker, is in test_pg_commits.py.
"""

from __future__ import annotations

import importlib.util
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from heddle import serving
from support.processes import serve_process

COMMON = Path(__file__).parents[2] / "bench" / "common.py"
IDLE_WAKEUPS_PER_S = 4.0  # measured 1.1 (uvicorn's tick and the pollers); 11-12 with uvicorn's own loop
MEASURED_SECONDS = 8.0


def _wakeups():
    spec = importlib.util.spec_from_file_location("bench_common", COMMON)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.wakeups


wakeups = _wakeups()


@pytest.mark.slow
def test_an_idle_embedded_server_wakes_a_few_times_a_second_and_stops_on_sigterm(tmp_path):
    proc, _base = serve_process(f"sqlite+aiosqlite:///{tmp_path / 'heddle.db'}", args=(),
                                env={"HEDDLE_LOG_LEVEL": "INFO"})  # its last line says it stopped cleanly
    try:
        time.sleep(3)  # start-up's work (first prunes, the heap settled) is over
        before, started = wakeups(proc.pid), time.monotonic()
        time.sleep(MEASURED_SECONDS)
        rate = (wakeups(proc.pid) - before) / (time.monotonic() - started)
        assert 0 < rate < IDLE_WAKEUPS_PER_S, f"woken {rate:.1f} times a second, idle"
        proc.send_signal(signal.SIGTERM)
        # shut down gracefully, then uvicorn raises the signal again for whoever started it
        assert proc.wait(30) in (0, -signal.SIGTERM)
        assert "Finished server process" in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()


async def _empty_app(scope, receive, send):  # pragma: no cover - never called
    raise AssertionError("no request is sent")


@pytest.mark.parametrize("ways", ["thread", "twice"])
def test_setting_should_exit_stops_the_server_at_once_not_at_its_next_tick(monkeypatch, ways):
    """With the tick an hour long, a stop that waited for it would hang the join below."""
    monkeypatch.setattr(serving, "TICK_SECONDS", 3600.0)
    sock = socket.create_server(("127.0.0.1", 0))
    server = serving.QuietServer(uvicorn.Config(_empty_app, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started and not server.should_exit
    if ways == "twice":  # False first, as uvicorn itself sets it: nothing wakes, nothing stops
        server.should_exit = False
        thread.join(0.2)
        assert thread.is_alive()
    server.should_exit = True
    thread.join(30)
    assert not thread.is_alive()
    server.should_exit = True  # again, its loop closed now: harmless
    assert server.should_exit


def test_should_exit_set_before_the_server_runs_stops_it_before_its_loop():
    server = serving.QuietServer(uvicorn.Config(_empty_app, lifespan="off"))
    assert server.should_exit is False
    server.should_exit = True  # no loop yet: only remembered
    assert server.should_exit is True
    sock = socket.create_server(("127.0.0.1", 0))
    server.run(sockets=[sock])  # starts, sees should_exit, shuts down without waiting a tick
    assert server.started and server.should_exit is True
