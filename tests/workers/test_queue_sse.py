"""The run event stream (SSE) on API process A follows a run a worker executes as the shared
bus carries its events, not at A's next poll of the table (set here to a minute)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.sse import collect
from workers.procs import start

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_sse_on_api_a_wakes_on_the_bus_when_a_worker_moves_the_run(deployment_env, tmp_path, tenant):
    api_a = start("serve", {**deployment_env, "HEDDLE_SSE_POLL_SECONDS": "60"}, tmp_path)
    worker = start("worker", deployment_env, tmp_path)
    try:
        for proc in (api_a, worker):
            proc.wait_healthy()
        agent = tenant.add_agent({**SCRIPTED_AGENT, "name": "sse-helper"})
        h = tenant.headers("web:sse")
        with httpx.Client(base_url=api_a.base_url, timeout=10) as http:
            thread = open_thread(http, h, agent)
            run_id = post(http, h, thread, "ask: Shall we?")["run_id"]
            assert wait_run(http, h, run_id, states=("awaiting_input",), timeout=30)["state"] == "awaiting_input"
            got: dict = {}

            def follow() -> None:
                got["events"], got["ended"] = collect(http, f"/v1/loom/runs/{run_id}/events", h, timeout=90)
                got["at"] = time.monotonic()

            reader = threading.Thread(target=follow, daemon=True)
            reader.start()
            time.sleep(1.0)  # the stream has replayed the stored events and waits
            answered = time.monotonic()
            post(http, h, thread, "yes")  # the worker resumes and closes the run
            reader.join(timeout=60)
        assert got.get("ended"), "the stream did not end"
        states = [e["data"]["state"] for e in got["events"] if e["event"] == "run.updated"]
        assert states[-1] == "closed" and "awaiting_input" in states
        assert got["at"] - answered < 15, "the stream waited for its poll, not the bus"
    finally:
        for proc in (api_a, worker):
            proc.kill()
