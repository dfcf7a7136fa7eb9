"""Commit budgets of the PostgreSQL layout, counted across every process (issue 31).

One API (`heddle serve`, queue mode) and one `heddle worker`, real subprocesses on a fresh
PostgreSQL database with the PostgreSQL event bus. Every transaction a client of the database
commits is counted, whichever process and library made it (Heddle's sessions, the request log,
procrastinate's job bookkeeping, the bus): the database logs every statement of this database
(`log_statement = all`, set on it alone), and each backend's statements are replayed in order,
counting each COMMIT and each statement outside a transaction block that may write (bench/pg_costs.py
`commits_of`, which gives the same figures by process and cause). A plain SELECT outside a block
(Heddle's read sessions on PostgreSQL, heddle/db/base.py) commits nothing: PostgreSQL gives a
read-only transaction no transaction id and writes no commit record for it.

Not counted: the read-only transactions PostgreSQL opens by itself in a LISTENing backend to
read the notification queue (`pg_stat_database.xact_commit` has them: one per listener per
notifying commit in this database, and more whenever other databases of the server notify a
lot, which a shared test server does all the time). docs/operations.md gives both figures.

Each measurement is a whole lifecycle (start the layout, one warm-up run, drive it, stop it), and
a baseline lifecycle with nothing to drive is subtracted, so start-up and shutdown cancel out:

    commits per run = (lifecycle with 1 + N runs - baseline) / N

Runs go in `CONVERSATIONS` conversations at once, each posting and polling in turn (a light
load). One run at a time is the worst case for the queue's own bookkeeping (a worker that goes
idle after each job looks once more for work) and the request log (a batch per run); that case
is measured by bench/pg_costs.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
import httpx
import pytest

from hosted_runs.conftest import TOOLS, ToolHost
from support.loom import open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant
from workers.procs import queue_env, start

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

SCRIPTED_BUDGET = 8  # commits per scripted run, all processes (was 160-240 before issue 31)
TOOL_BUDGET = 12  # with one hosted tool call (was 37-60)
IDLE_COMMITS_PER_S = 1.0
# Times a second the API and the worker may each be woken when idle (its threads' voluntary context
# switches): each of uvicorn's upkeep, the webhook and schedule polls once a second and their
# replies; it was 12 (API) and 20-25 (worker) when uvicorn and psycopg woke ten times a second.
# A count, where the layout's CPU (bench/pg_costs.py) depends on the machine: idle, the same
# code measured 1-20% of a core (docs/operations.md, "Idle wake-ups").
IDLE_WAKEUPS_PER_S = 8.0
RUNS = 24
CONVERSATIONS = 4
IDLE_SECONDS = 20.0
BENCH = Path(__file__).parents[2] / "bench" / "pg_costs.py"


def _admin_url(db_url: str) -> tuple[str, str]:
    base, name = db_url.replace("postgresql+asyncpg://", "postgresql://").rsplit("/", 1)
    return f"{base}/postgres", name


async def _fetch(db_url: str, sql: str):
    admin, name = _admin_url(db_url)
    conn = await asyncpg.connect(admin)  # another database: reading costs the measured one nothing
    try:
        return await conn.fetch(sql, name)
    finally:
        await conn.close()


def _pg_costs():
    spec = importlib.util.spec_from_file_location("pg_costs", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH.parent))
    return module


pg_costs = _pg_costs()


def server_log(db_url: str) -> str:
    """The PostgreSQL server's log file (Debian's cluster layout unless HEDDLE_TEST_PG_LOG says)."""
    rows = asyncio.run(_fetch(db_url, "SELECT current_setting('server_version_num')::int / 10000 AS major, $1"))
    path = os.environ.get("HEDDLE_TEST_PG_LOG") or f"/var/log/postgresql/postgresql-{rows[0]['major']}-main.log"
    if not os.access(path, os.R_OK):
        message = f"the PostgreSQL server log {path} is not readable (set HEDDLE_TEST_PG_LOG)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    return path


def commits_in_log(log_path: str, offset: int, db_url: str) -> int:
    time.sleep(0.5)  # each backend writes its own lines
    name = _admin_url(db_url)[1]
    return sum(pg_costs.commits_of(pg_costs.read_statements(log_path, offset, name)).values())


def backends(db_url: str) -> list[int]:
    rows = asyncio.run(_fetch(db_url, "SELECT pid FROM pg_stat_activity WHERE datname = $1"))
    return [r["pid"] for r in rows]


async def _log_statements(db_url: str) -> None:
    admin, name = _admin_url(db_url)
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f"ALTER DATABASE \"{name}\" SET log_statement = 'all'")
    finally:
        await conn.close()


def wait_no_backends(db_url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while backends(db_url) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not backends(db_url), "the layout's connections did not close"


@pytest.fixture(scope="module")
def layout(pg_database_factory, tmp_path_factory):
    """The deployment's settings and a seeded tenant (agent with a hosted tool); the seeding
    server is stopped before anything is measured."""
    env = queue_env(pg_database_factory(), HEDDLE_OUTBOUND_TIMEOUT="30")
    live = LiveServer(**{k.removeprefix("HEDDLE_").lower(): v for k, v in env.items()}).start()
    tenant = make_tenant(live, credits=1000)
    from heddle.workspaces import service as ws_service

    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    host = ToolHost(request_secret=ws.request_secret, key_id=tenant.key_id).start()
    tenant.update(mint_url=f"{host.base_url}/mint", jwks_json=host.jwks)

    async def connect(s):
        await ws_service.create_connection(s, tenant.workspace_id, "bank", host.base_url)

    tenant.run(connect)
    tenant.agent = tenant.add_agent({"name": "banker", "model_class": "scripted", "instructions": "", "tools": TOOLS})
    live.stop()
    wait_no_backends(env["HEDDLE_DATABASE_URL"])
    db_url = env["HEDDLE_DATABASE_URL"]
    log_path = server_log(db_url)
    asyncio.run(_log_statements(db_url))  # for the sessions of the processes started from now on
    yield env, tenant, host, tmp_path_factory.mktemp("procs"), log_path
    host.stop()


def lifecycle(layout, drive) -> int:
    """Commits of one start / drive / stop of 1 API + 1 worker."""
    env, tenant, _host, tmp, log_path = layout
    db_url = env["HEDDLE_DATABASE_URL"]
    offset = os.path.getsize(log_path)
    api = start("serve", env, tmp)
    worker = start("worker", env, tmp, "--concurrency", "4")
    try:
        api.wait_healthy()
        worker.wait_healthy()
        with httpx.Client(base_url=api.base_url, timeout=30) as http:
            h = tenant.headers(f"web:budget-{time.monotonic_ns()}")
            thread = open_thread(http, h, tenant.agent)
            run_in(http, h, thread, "hello")  # warm-up, in every lifecycle
            drive(http, h, thread, api, worker)
    finally:
        api.terminate()
        worker.terminate()
    wait_no_backends(db_url)
    return commits_in_log(log_path, offset, db_url)


def run_in(http, h, thread: str, content: str) -> None:
    run_id = post(http, h, thread, content)["run_id"]
    assert wait_run(http, h, run_id, states=("closed", "failed"), timeout=60)["state"] == "closed"


def runs_of(layout, content: str):
    tenant = layout[1]

    def drive(_http, _h, _thread, api, _worker):
        def conversation(i: int) -> None:
            with httpx.Client(base_url=api.base_url, timeout=30) as http:
                h = tenant.headers(f"web:conversation-{i}-{time.monotonic_ns()}")
                thread = open_thread(http, h, tenant.agent)
                for _ in range(RUNS // CONVERSATIONS):
                    run_in(http, h, thread, content)

        with ThreadPoolExecutor(CONVERSATIONS) as pool:
            list(pool.map(conversation, range(CONVERSATIONS)))

    return drive


@pytest.fixture(scope="module")
def baseline(layout):
    return lifecycle(layout, lambda *_: None)


def test_a_scripted_run_costs_at_most_8_commits_in_all_processes(layout, baseline):
    per_run = (lifecycle(layout, runs_of(layout, "hello there, how are you today?")) - baseline) / RUNS
    assert per_run <= SCRIPTED_BUDGET, f"{per_run:.1f} commits per scripted run"


def test_a_run_with_one_hosted_tool_costs_at_most_12_commits(layout, baseline):
    host = layout[2]
    before = len(host.calls("/tools/balance"))
    per_run = (lifecycle(layout, runs_of(layout, "call: balance {}")) - baseline) / RUNS
    assert len(host.calls("/tools/balance")) - before == RUNS  # each run called the tool, once
    assert per_run <= TOOL_BUDGET, f"{per_run:.1f} commits per run with a tool"


def test_an_idle_layout_commits_less_than_once_a_second_and_wakes_rarely(layout, baseline):
    woken: dict[str, float] = {}

    def idle(_http, _h, _thread, api, worker):
        time.sleep(3)  # start-up work (first prunes, the worker's registration) is over
        before, started = [(p, pg_costs.wakeups(p.pid)) for p in (api, worker)], time.monotonic()
        time.sleep(IDLE_SECONDS - 3)
        woken.update({p.kind: (pg_costs.wakeups(p.pid) - n) / (time.monotonic() - started) for p, n in before})

    rate = (lifecycle(layout, idle) - baseline) / IDLE_SECONDS
    assert rate < IDLE_COMMITS_PER_S, f"{rate:.2f} commits/s idle"
    assert max(woken.values()) < IDLE_WAKEUPS_PER_S, f"woken a second, idle: {woken}"
