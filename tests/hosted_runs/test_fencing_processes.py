"""The issue's scenario with real processes on real PostgreSQL.

Process A (`heddle serve`, a subprocess) executes a run that calls a slow idempotent tool; A is
frozen with SIGSTOP while the call is in flight and stays frozen past its lease. Process B (this
test's server) takes the run over through its recovery sweep, calls the tool again and closes
the run. A is resumed with SIGCONT and its call returns: it must write nothing and call nothing.
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid

import httpx
import pytest

from support.loom import open_thread, post, wait_run
from support.processes import serve_process
from support.server import LiveServer

from .test_fencing import gated_calls, snapshot

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE_SECONDS = 2.0


@pytest.fixture(scope="module")
def server(pg_database_factory):
    # B never sweeps on its own here: the test runs its recovery once A's lease has expired.
    live = LiveServer(database_url=pg_database_factory(), run_lease_seconds=LEASE_SECONDS,
                      run_sweep_seconds=3600, outbound_timeout=30.0).start()
    yield live
    live.stop()


def _serve(db_url: str) -> tuple[subprocess.Popen, str]:
    return serve_process(db_url, env={"HEDDLE_RUN_LEASE_SECONDS": str(LEASE_SECONDS),
                                       "HEDDLE_OUTBOUND_TIMEOUT": "30"})


def test_paused_process_resumed_after_takeover_writes_and_calls_nothing(server, http, tenant, toolhost):
    proc, base = _serve(server.settings.database_url)
    try:
        h = tenant.headers("web:sigstop")
        with httpx.Client(base_url=base, timeout=10) as a:
            run_id = post(a, h, open_thread(a, h, tenant.agent), "call: gated {}")["run_id"]
        assert toolhost.gate_entered.wait(15), "process A never called the tool"
        proc.send_signal(signal.SIGSTOP)
        time.sleep(LEASE_SECONDS + 0.5)  # A's lease expires while it is frozen

        recovered = server.call(server.services.executor.recover())
        assert uuid.UUID(run_id) in recovered
        run = wait_run(http, h, run_id, states=("closed",), timeout=15)
        assert run["state"] == "closed"
        before = snapshot(tenant, run_id)
        assert len(gated_calls(toolhost)) == 2

        proc.send_signal(signal.SIGCONT)
        toolhost.gate.set()  # A's call in flight now returns to it
        time.sleep(LEASE_SECONDS)  # A's engine and lease renewer both wake up and act
        assert proc.poll() is None, "process A died instead of stopping the run cleanly"
        assert snapshot(tenant, run_id) == before
        assert len(gated_calls(toolhost)) == 2  # never a third call
        [call] = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"][0]["tool_calls"]
        assert call["status"] == "succeeded" and call["result"] == {"call": 2}
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert b"run_executor_stale" in err
