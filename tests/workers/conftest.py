"""Fixtures for queue mode: a module-wide deployment on a fresh PostgreSQL database.

`server` is an in-thread API process in queue mode (it never executes runs); tests use it to
seed workspaces, agents and the tool host, and start real `heddle serve` / `heddle worker`
subprocesses on the same database and bus (tests/scale/procs.py).
"""

from __future__ import annotations

import pytest

from hosted_runs.conftest import toolhost  # noqa: F401  (the real tool host, re-used)
from realtime.conftest import pusher_js  # noqa: F401
from workers.procs import queue_env


@pytest.fixture(scope="module")
def deployment_env(pg_database_factory):
    return queue_env(pg_database_factory(), HEDDLE_RUN_LEASE_SECONDS="2", HEDDLE_WORKER_HEARTBEAT_SECONDS="1",
                     HEDDLE_WORKER_STALLED_SECONDS="3", HEDDLE_OUTBOUND_TIMEOUT="30")


@pytest.fixture(scope="module")
def server(deployment_env):
    from support.server import LiveServer

    settings = {k.removeprefix("HEDDLE_").lower(): v for k, v in deployment_env.items()}
    live = LiveServer(**settings).start()
    yield live
    live.stop()
