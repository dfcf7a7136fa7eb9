"""PostgreSQL layouts for bench/scale.py and bench/pg_costs.py: API and worker processes on a fresh database.

`Deployment`: a fresh PostgreSQL database, `apis` x `heddle serve` (enqueue only) and N
`heddle worker` processes, on the PostgreSQL event bus. Kinds of run (`MESSAGES`):

* `scripted`: one model turn (the built-in scripted model), then `closed`;
* `tool50` / `tool200`: the model calls a hosted tool on a local tool host (its own process)
  that answers after 50 / 200 ms, then summarises: two model turns and one outbound call. The
  tool host counts its calls: each run must call it exactly once.

`workers=0` is the in-process layout: one `heddle serve` executing its own runs
(HEDDLE_EXECUTOR=inprocess) on the same PostgreSQL.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import cli, create_agent, free_port  # noqa: E402
from run_driver import heddle_calls  # noqa: E402

PG_ADMIN = os.environ.get("HEDDLE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
TOOL_DELAYS = {"slow50": 0.050, "slow200": 0.200}
AGENT = """name: bench
model_class: scripted
instructions: Be brief.
tools:
  - name: slow50
    description: Answers after 50 ms
    path: /tools/slow50
    connection: host
    interaction: auto
    reliability: idempotent
  - name: slow200
    description: Answers after 200 ms (I/O-bound runs)
    path: /tools/slow200
    connection: host
    interaction: auto
    reliability: idempotent
"""
MESSAGES = {"scripted": "hello", "tool50": "call: slow50 {}", "tool200": "call: slow200 {}"}


def tool_host_app():
    """The tool host (and mint endpoint); runs in its own process (`python scale_queue.py PORT`)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    calls = 0

    async def mint(_request: Request):
        return JSONResponse({"token": secrets.token_urlsafe(24), "expires_in": 600})

    async def slow(request: Request):
        nonlocal calls
        calls += 1
        await asyncio.sleep(TOOL_DELAYS[request.path_params["name"]])
        return JSONResponse({"ok": True})

    async def count(_request: Request):
        return PlainTextResponse(str(calls))

    return Starlette(routes=[Route("/mint", mint, methods=["POST"]), Route("/tools/{name}", slow, methods=["POST"]),
                             Route("/calls", count)])


class ToolHost:
    def __init__(self):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> ToolHost:
        self.proc = subprocess.Popen([sys.executable, __file__, str(self.port)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        _wait(f"{self.base_url}/calls")
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(10)

    @property
    def calls(self) -> int:
        return int(httpx.get(f"{self.base_url}/calls", timeout=10).text)


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


class Deployment:
    """A fresh database, one API and `workers` worker processes in queue mode."""

    def __init__(self, workers: int, worker_concurrency: int, *, apis: int = 1, before_start=None, **env: str):
        self.before_start = before_start  # called with the deployment after migrating, before any process
        self.name = f"heddle_bench_{secrets.token_hex(5)}"
        base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
        self.db_url = f"{base}/{self.name}"
        self.ports = [free_port() for _ in range(apis)]
        self.port = self.ports[0]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.base_urls = [f"http://127.0.0.1:{p}" for p in self.ports]
        self.workers, self.worker_concurrency = workers, worker_concurrency
        # workers=0: the API executes its runs itself (HEDDLE_EXECUTOR=inprocess), the baseline.
        self.env = {**os.environ, "HEDDLE_DATABASE_URL": self.db_url,
                    "HEDDLE_EXECUTOR": "queue" if workers else "inprocess",
                    "HEDDLE_EVENT_BUS": "postgres", "HEDDLE_EVENT_BUS_CHANNEL": self.name,
                    "HEDDLE_PUSHER_APP_ID": "bench", "HEDDLE_PUSHER_KEY": f"key-{secrets.token_hex(4)}",
                    "HEDDLE_PUSHER_SECRET": secrets.token_urlsafe(24), "HEDDLE_LOG_LEVEL": "WARNING",
                    "HEDDLE_OUTBOUND_ALLOW_PRIVATE": "true", "HEDDLE_MIGRATE_ON_START": "false",
                    # The driver polls every few ms, far above a person: rate limits off, as in every bench.
                    "HEDDLE_RATE_LIMIT_PER_KEY": "off", "HEDDLE_RATE_LIMIT_PER_SUBJECT": "off",
                    # One API and one worker run with the service's own pool (30, no overflow),
                    # as a user would deploy them. Layouts of more processes get 8 each, to stay
                    # well under PostgreSQL's default max_connections (100), which a shared test
                    # server also spends on other databases.
                    **({} if apis + workers <= 2 else {"HEDDLE_DB_POOL_SIZE": "8", "HEDDLE_DB_MAX_OVERFLOW": "0"}),
                    **env}
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Deployment:
        asyncio.run(_admin(f'CREATE DATABASE "{self.name}"'))
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        cli(self.db_url, "migrate")
        if self.before_start is not None:
            self.before_start(self)
        heddle = [sys.executable, "-m", "heddle"]
        self.logs = tempfile.TemporaryDirectory()
        ports = [free_port() for _ in range(self.workers)]
        # API processes first (bench/pg_costs.py counts on it)
        commands = [["serve", "--port", str(port)] for port in self.ports] + [
            ["worker", "--port", str(port), "--concurrency", str(self.worker_concurrency)] for port in ports]
        for command in commands:
            with open(Path(self.logs.name) / f"{command[0]}-{command[2]}.log", "w") as log:
                self.procs.append(subprocess.Popen([*heddle, *command], env=self.env, stdout=log,
                                                   stderr=subprocess.STDOUT))
        for url in [*self.base_urls, *(f"http://127.0.0.1:{p}" for p in ports)]:
            try:
                _wait(f"{url}/healthz")
            except RuntimeError as exc:
                port = url.rsplit(":", 1)[1]
                tail = "".join(p.read_text()[-1500:] for p in Path(self.logs.name).glob(f"*-{port}.log"))
                raise RuntimeError(f"{exc}; its output ends: {tail}") from None

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if getattr(self, "logs", None) is not None:
            self.logs.cleanup()
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))

    def seed(self, host: ToolHost) -> tuple[str, str]:
        ws = cli(self.db_url, "workspace", "create", "--name", "bench", "--credits", "1000000")["id"]
        secret = cli(self.db_url, "key", "create", "--workspace", ws)["secret"]
        # The bench's tool host is on loopback: saved as a local development URL (--dev).
        cli(self.db_url, "workspace", "update", ws, "--mint-url", f"{host.base_url}/mint", "--dev")
        cli(self.db_url, "connection", "create", "--workspace", ws, "--name", "host", "--base-url", host.base_url,
            "--dev")
        agent = create_agent(self.db_url, ws, AGENT)
        return secret, agent


def _wait(url: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not become healthy")


def _calls(secret: str, agent: str, tag: str, message: str):
    """bench/run_driver's Heddle calls, posting `message` instead of "hello N"."""
    open_thread, post_message, is_done = heddle_calls(secret, agent, tag)

    async def post(client, thread, _content):
        return await post_message(client, thread, message)

    return open_thread, post, is_done


if __name__ == "__main__":  # the tool host process
    import uvicorn

    uvicorn.run(tool_host_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
