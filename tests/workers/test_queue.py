"""Queue mode with real processes on real PostgreSQL: `heddle serve` enqueues, `heddle worker`s execute.

Every tool call lands on the real tool host of tests/hosted_runs, which records each request,
so "exactly once" is counted where it matters: at the host.
"""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import text

from support.loom import open_thread, post, wait_run
from workers.procs import start

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def jobs(server, run_id: str | None = None) -> dict[str, int]:
    """procrastinate's jobs of the run queue (of one run), counted by status."""
    async def read():
        async with server.services.database().session() as s:
            rows = await s.execute(text(
                "SELECT status::text, count(*) FROM procrastinate_jobs WHERE task_name = 'heddle.execute_run' "
                "AND (CAST(:rid AS text) IS NULL OR args->>'run_id' = :rid) GROUP BY status"), {"rid": run_id})
            return dict(rows.all())

    return server.call(read())


@pytest.fixture
def api(deployment_env, tmp_path):
    proc = start("serve", deployment_env, tmp_path).wait_healthy()
    yield proc
    proc.kill()


@pytest.fixture
def workers(deployment_env, tmp_path):
    started = []

    def make(*args: str, **env: str):
        proc = start("worker", {**deployment_env, **env}, tmp_path, *args).wait_healthy()
        started.append(proc)
        return proc

    yield make
    for proc in started:
        proc.kill()


def test_with_no_worker_a_posted_run_stays_queued_until_a_worker_starts(api, workers, tenant, toolhost):
    h = tenant.headers("web:queued")
    with httpx.Client(base_url=api.base_url, timeout=10) as http:
        run_id = post(http, h, open_thread(http, h, tenant.agent), "call: balance {}")["run_id"]
        time.sleep(2)
        run = http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]
        assert run["state"] == "running" and not toolhost.calls("/tools/balance")
        assert jobs(tenant.server, run_id) == {"todo": 1}
        workers("--concurrency", "2")
        assert wait_run(http, h, run_id, states=("closed",), timeout=30)["state"] == "closed"
    assert len(toolhost.calls("/tools/balance")) == 1
    deadline = time.monotonic() + 10  # the job finishes just after the run closes
    while jobs(tenant.server, run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert jobs(tenant.server, run_id) == {}  # done, and deleted (successful jobs are not kept)


def test_one_api_and_two_workers_close_200_runs_each_tool_call_reaching_the_host_once(
        api, workers, tenant, toolhost):
    first, second = workers("--concurrency", "8"), workers("--concurrency", "8")
    n = 200

    def one(i: int) -> str:
        h = tenant.headers(f"web:many-{i}")
        with httpx.Client(base_url=api.base_url, timeout=30) as http:
            return post(http, h, open_thread(http, h, tenant.agent), "call: balance {}")["run_id"]

    with ThreadPoolExecutor(8) as pool:
        run_ids = list(pool.map(one, range(n)))
    with httpx.Client(base_url=api.base_url, timeout=30) as http:
        for i, run_id in enumerate(run_ids):
            run = wait_run(http, tenant.headers(f"web:many-{i}"), run_id, states=("closed", "failed"), timeout=120)
            assert run["state"] == "closed", run
    calls = toolhost.calls("/tools/balance")
    assert len(calls) == n
    assert {c.body["run_id"] for c in calls} == set(run_ids)
    assert len({c.body["tool_call_id"] for c in calls}) == n
    done = {name: _executed(proc) for name, proc in (("first", first), ("second", second))}
    assert all(done.values()), f"both workers should have executed runs: {done}"


def _executed(proc) -> float:
    metrics = httpx.get(f"{proc.base_url}/metrics", timeout=5).text
    [count] = [line.split()[-1] for line in metrics.splitlines()
               if line.startswith("heddle_queue_job_wait_seconds_count")]
    return float(count)


def test_a_worker_killed_mid_run_leaves_it_to_another_that_finishes_it(api, workers, tenant, toolhost):
    doomed = workers()
    h = tenant.headers("web:kill9")
    with httpx.Client(base_url=api.base_url, timeout=10) as http:
        run_id = post(http, h, open_thread(http, h, tenant.agent), "call: gated {}")["run_id"]
        assert toolhost.gate_entered.wait(30), "the worker never called the tool"
        doomed.popen.kill()  # SIGKILL, mid tool call: no heartbeat, no lease renewal, no release
        doomed.popen.wait(10)
        toolhost.gate.set()
        workers()
        run = wait_run(http, h, run_id, states=("closed", "failed"), timeout=60)
        assert run["state"] == "closed", run
        [call] = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"][0]["tool_calls"]
    assert call["status"] == "succeeded" and call["result"] == {"call": 2}
    assert len(toolhost.calls("/tools/gated")) == 2  # the killed worker's call, then the finisher's


def test_sigterm_lets_a_worker_finish_its_run_then_exit(api, workers, tenant, toolhost):
    worker = workers(HEDDLE_WORKER_SHUTDOWN_GRACE="30")
    h = tenant.headers("web:sigterm")
    with httpx.Client(base_url=api.base_url, timeout=10) as http:
        run_id = post(http, h, open_thread(http, h, tenant.agent), "call: gated {}")["run_id"]
        assert toolhost.gate_entered.wait(30)
        worker.popen.send_signal(15)
        time.sleep(1)
        assert worker.popen.poll() is None  # still finishing its run
        toolhost.gate.set()
        assert worker.popen.wait(30) == 0
        assert http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]["state"] == "closed"
    assert len(toolhost.calls("/tools/gated")) == 1


def test_sigterm_past_the_grace_period_hands_the_run_back_to_the_queue(api, workers, tenant, toolhost):
    worker = workers(HEDDLE_WORKER_SHUTDOWN_GRACE="1")
    h = tenant.headers("web:handback")
    with httpx.Client(base_url=api.base_url, timeout=10) as http:
        run_id = post(http, h, open_thread(http, h, tenant.agent), "call: gated {}")["run_id"]
        assert toolhost.gate_entered.wait(30)
        worker.popen.send_signal(15)
        assert worker.popen.wait(30) == 0
        assert jobs(tenant.server, run_id) == {"todo": 1}  # handed back
        toolhost.gate.set()
        workers()
        run = wait_run(http, h, run_id, states=("closed", "failed"), timeout=60)
        assert run["state"] == "closed", run
    assert len(toolhost.calls("/tools/gated")) == 2


def test_worker_health_and_metrics(workers, tenant):
    worker = workers("--concurrency", "3")
    health = httpx.get(f"{worker.base_url}/healthz", timeout=5).json()["data"]
    assert health["ok"] is True and health["role"] == "worker" and health["concurrency"] == 3
    ready = httpx.get(f"{worker.base_url}/readyz", timeout=5).json()["data"]
    assert ready["database"] == "ok" and set(ready["queue"]) == {"todo", "doing"}
    metrics = httpx.get(f"{worker.base_url}/metrics", timeout=5).text
    for name in ("heddle_queue_jobs{status=\"todo\"}", "heddle_queue_job_wait_seconds_bucket",
                 "heddle_runs_executing"):
        assert name in metrics


def test_a_worker_paused_past_its_lease_then_resumed_writes_nothing_and_calls_nothing(
        api, workers, tenant, toolhost):
    from hosted_runs.test_fencing import snapshot

    paused = workers()
    h = tenant.headers("web:sigstop")
    with httpx.Client(base_url=api.base_url, timeout=10) as http:
        run_id = post(http, h, open_thread(http, h, tenant.agent), "call: gated {}")["run_id"]
        assert toolhost.gate_entered.wait(30), "the worker never called the tool"
        paused.popen.send_signal(signal.SIGSTOP)  # mid tool call: its heartbeat and lease stop
        try:
            workers()  # retries the stalled job, waits out the lease, takes the run with a new fence
            run = wait_run(http, h, run_id, states=("closed", "failed"), timeout=60)
            assert run["state"] == "closed", run
            before = snapshot(tenant, run_id)
            assert len(toolhost.calls("/tools/gated")) == 2
        finally:
            paused.popen.send_signal(signal.SIGCONT)
        toolhost.gate.set()  # the paused worker's call now returns to it
        time.sleep(4)  # its engine, lease renewer and procrastinate loop all wake up and act
        assert snapshot(tenant, run_id) == before
        assert len(toolhost.calls("/tools/gated")) == 2  # never a third call
        assert http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]["state"] == "closed"
