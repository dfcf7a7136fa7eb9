"""Python 3.12+ with `HEDDLE_EAGER_TASKS`: once started, a server runs new tasks eagerly
(`serving.start_tasks_eagerly`, issue 48): a task's first step runs inside the `create_task` that
makes it.

What that asks of the code that creates tasks, checked on a real server: the executor keeps no
task of a run that ended in its first step (it would take the run for busy for ever, and an
answer to the run's question would never resume it). On Python 3.11 nothing is eager and these
tests check that nothing changed.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time

import httpx
import pytest

from heddle.serving import start_tasks_eagerly
from support.loom import open_thread, post, wait_run
from support.processes import serve_in

EAGER = sys.version_info >= (3, 12)
AGENT = {"name": "eager", "model_class": "scripted", "instructions": "Be brief.", "tools": []}


def _first_steps(enabled: bool) -> tuple[list[str], list[str], object]:
    """What a new task had done when `create_task` returned: with the factory set, and after
    the factory was put back; and the loop's factory at the end."""
    async def main():
        steps: list[str] = []

        async def job(name: str) -> None:
            steps.append(name)
            await asyncio.sleep(0)

        restore = start_tasks_eagerly(enabled)
        try:
            task = asyncio.create_task(job("while set"))
            while_set = list(steps)
        finally:
            if restore is not None:
                restore()
        await task
        steps.clear()
        later = asyncio.create_task(job("after"))
        after = list(steps)
        await later
        return while_set, after, asyncio.get_running_loop().get_task_factory()

    return asyncio.run(main())


def test_a_new_task_takes_its_first_step_inside_create_task():
    while_set, after, factory = _first_steps(True)
    assert while_set == (["while set"] if EAGER else [])
    assert after == [] and factory is None  # the loop's own factory is back


def test_off_leaves_the_loop_as_it_was():
    while_set, after, factory = _first_steps(False)
    assert while_set == [] and after == [] and factory is None


def test_serve_starts_tasks_eagerly_only_when_asked(tmp_path):
    """`HEDDLE_EAGER_TASKS=true`: the server says whether this Python has eager tasks (3.12+);
    unset, it says nothing and nothing changes."""
    base = {**{k: v for k, v in os.environ.items() if not k.startswith("HEDDLE_")}, "HEDDLE_LOG_LEVEL": "INFO"}
    for asked, folder in ((True, tmp_path / "on"), (False, tmp_path / "off")):
        folder.mkdir()
        env = {**base, "HEDDLE_EAGER_TASKS": "true"} if asked else base
        proc, port, output = serve_in(folder, env, ["--dev"])
        try:
            assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        finally:
            proc.terminate()
        said = [w.lower() for w in re.findall(r"eager_tasks\W.*?started\W+(\w+)", output())]
        assert said == ([str(EAGER).lower()] if asked else []), said


@pytest.fixture
def eager_server(tenant):
    """The test server's loop with eager tasks for one test (as `HEDDLE_EAGER_TASKS` would)."""
    async def start():
        return start_tasks_eagerly()

    async def stop(restore):
        restore()

    restore = tenant.server.call(start())
    yield tenant.server
    if restore is not None:
        tenant.server.call(stop(restore))


def test_runs_that_end_in_their_first_step_leave_no_task_and_resume_when_answered(http, tenant, eager_server):
    executor = eager_server.services.executor
    agent = tenant.add_agent(AGENT)
    h = tenant.headers("web:eager")
    thread = open_thread(http, h, agent)
    # The scripted model answers without waiting: eagerly, the run may close (or ask) before
    # `submit` has its task back.
    for text in ("hello", "and again"):
        assert wait_run(http, h, post(http, h, thread, text)["run_id"])["state"] == "closed"
    run_id = post(http, h, thread, "ask: which account?")["run_id"]
    assert wait_run(http, h, run_id)["state"] == "awaiting_input"
    deadline = time.monotonic() + 10
    while executor._tasks and time.monotonic() < deadline:  # a run's task ends just after its run
        time.sleep(0.02)
    assert executor._tasks == {}
    # Answered, the same run is submitted again: it must run, not be taken for one still going.
    assert post(http, h, thread, "GB29NWBK60161331926819")["run_id"] == run_id
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "closed", run
