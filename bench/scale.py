"""Runs at scale: throughput and message -> closed with 1, 2 and 4 workers on PostgreSQL.

For each worker count, a fresh PostgreSQL database, one `heddle serve` (HEDDLE_EXECUTOR=queue,
enqueues only) and N `heddle worker` processes; `--threads` client tasks each post messages on
their own thread, one run at a time, until `--runs` runs closed. Two kinds of run:

* `scripted`: one model turn (the built-in scripted model), then `closed`;
* `tool50`: the model calls a hosted tool on a local tool host that answers after 50 ms, then
  summarises: two model turns and one outbound call.

runs/s is closed runs over the wall time of the whole batch; message -> closed is each run's
own `closed_at - opened_at` from the database (no polling error). Clients use one keep-alive
connection each (common.WireClient). Numbers on a shared 2-core machine are noisy: compare
ratios between rows of one invocation, never absolute figures across machines.

    python bench/scale.py [--workers 0,1,2,4] [--runs 200] [--threads 32] [--json]

`--workers 0` is the baseline: one `heddle serve` executing its own runs on the same PostgreSQL.

`queue_mode()` is the reusable part: call it with other worker counts or kinds of run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import asyncpg
import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).parent))
from common import WireClient, cli, free_port, summary  # noqa: E402

PG_ADMIN = os.environ.get("HEDDLE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
TOOL_DELAY_S = 0.050
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
"""
MESSAGES = {"scripted": "hello", "tool50": "call: slow50 {}"}


class ToolHost:
    """A local tool host (and mint endpoint) whose tool answers after 50 ms."""

    def __init__(self):
        async def mint(_request: Request):
            return JSONResponse({"token": secrets.token_urlsafe(24), "expires_in": 600})

        async def slow(_request: Request):
            self.calls += 1
            await asyncio.sleep(TOOL_DELAY_S)
            return JSONResponse({"ok": True})

        self.calls = 0
        self.port = free_port()
        app = Starlette(routes=[Route("/mint", mint, methods=["POST"]),
                                Route("/tools/slow50", slow, methods=["POST"])])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ToolHost:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


class Deployment:
    """A fresh database, one API and `workers` worker processes in queue mode."""

    def __init__(self, workers: int, worker_concurrency: int):
        self.name = f"heddle_bench_{secrets.token_hex(5)}"
        base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
        self.db_url = f"{base}/{self.name}"
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.workers, self.worker_concurrency = workers, worker_concurrency
        # workers=0: the API executes its runs itself (HEDDLE_EXECUTOR=inprocess), the baseline.
        self.env = {**os.environ, "HEDDLE_DATABASE_URL": self.db_url,
                    "HEDDLE_EXECUTOR": "queue" if workers else "inprocess",
                    "HEDDLE_EVENT_BUS": "postgres", "HEDDLE_EVENT_BUS_CHANNEL": self.name,
                    "HEDDLE_PUSHER_APP_ID": "bench", "HEDDLE_PUSHER_KEY": f"key-{secrets.token_hex(4)}",
                    "HEDDLE_PUSHER_SECRET": secrets.token_urlsafe(24), "HEDDLE_LOG_LEVEL": "WARNING",
                    "HEDDLE_OUTBOUND_ALLOW_PRIVATE": "true", "HEDDLE_MIGRATE_ON_START": "false"}
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Deployment:
        asyncio.run(_admin(f'CREATE DATABASE "{self.name}"'))
        cli(self.db_url, "migrate")
        heddle = [sys.executable, "-m", "heddle"]
        self.procs.append(subprocess.Popen([*heddle, "serve", "--port", str(self.port)], env=self.env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ports = [free_port() for _ in range(self.workers)]
        for port in ports:
            self.procs.append(subprocess.Popen(
                [*heddle, "worker", "--port", str(port), "--concurrency", str(self.worker_concurrency)],
                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for url in [self.base_url, *(f"http://127.0.0.1:{p}" for p in ports)]:
            _wait_healthy(url)
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))

    def seed(self, host: ToolHost) -> tuple[str, str]:
        ws = cli(self.db_url, "workspace", "create", "--name", "bench", "--credits", "1000000")["id"]
        secret = cli(self.db_url, "key", "create", "--workspace", ws)["secret"]
        cli(self.db_url, "workspace", "update", ws, "--mint-url", f"{host.base_url}/mint")
        cli(self.db_url, "connection", "create", "--workspace", ws, "--name", "host", "--base-url", host.base_url)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(AGENT)
        agent = cli(self.db_url, "agent", "create", "--workspace", ws, "--file", f.name)["id"]
        return secret, agent

    async def closed_ms(self, run_ids: list[str]) -> list[float]:
        conn = await asyncpg.connect(self.db_url.replace("+asyncpg", ""))
        try:
            rows = await conn.fetch("SELECT state, extract(epoch FROM closed_at - opened_at) * 1000 AS ms "
                                    "FROM runs WHERE id = ANY($1::uuid[])", run_ids)
        finally:
            await conn.close()
        assert all(r["state"] == "closed" for r in rows) and len(rows) == len(run_ids), "a run did not close"
        return [float(r["ms"]) for r in rows]


def _wait_healthy(url: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not become healthy")


async def _client(base_url: str, headers: dict, agent: str, message: str, todo: list, done: list) -> None:
    async with WireClient(base_url) as client:
        _, body = await client.request("POST", "/v1/loom/threads", headers, {"agent": agent})
        thread = body["data"]["id"]
        while todo:
            todo.pop()
            status, body = await client.request("POST", f"/v1/loom/threads/{thread}/messages", headers,
                                                {"content": message})
            assert status == 202, body
            run_id = body["data"]["run_id"]
            while True:
                await asyncio.sleep(0.02)
                _, run = await client.request("GET", f"/v1/loom/runs/{run_id}", headers)
                if run["data"]["terminal"]:
                    done.append(run_id)
                    break


async def _batch(dep: Deployment, secret: str, agent: str, kind: str, runs: int, threads: int) -> dict:
    todo, done = list(range(runs)), []
    started = time.perf_counter()
    await asyncio.gather(*[
        _client(dep.base_url, {"authorization": f"Bearer {secret}", "service-subject": f"bench:{kind}{i}"},
                agent, MESSAGES[kind], todo, done) for i in range(threads)])
    wall = time.perf_counter() - started
    closed = await dep.closed_ms(done)
    return {"runs": len(done), "runs_per_s": round(len(done) / wall, 1), "message_to_closed": summary(closed)}


def queue_mode(workers: int, *, kinds=("scripted", "tool50"), runs: int = 200, threads: int = 32,
               worker_concurrency: int = 16) -> list[dict]:
    """One deployment with `workers` workers; one batch per kind of run (after a short warm-up)."""
    results = []
    with ToolHost() as host, Deployment(workers, worker_concurrency) as dep:
        secret, agent = dep.seed(host)
        asyncio.run(_batch(dep, secret, agent, "scripted", min(20, runs), min(threads, 8)))  # warm-up
        for kind in kinds:
            calls_before = host.calls
            result = asyncio.run(_batch(dep, secret, agent, kind, runs, threads))
            if kind == "tool50":
                assert host.calls - calls_before == result["runs"], "each run calls the tool exactly once"
            results.append({"mode": "queue" if workers else "inproc", "workers": workers, "kind": kind,
                            "threads": threads, **result})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="0,1,2,4",
                        help="worker counts (default 0,1,2,4; 0 = one in-process `heddle serve`, the baseline)")
    parser.add_argument("--runs", type=int, default=200, help="runs per batch (default 200)")
    parser.add_argument("--threads", type=int, default=32, help="concurrent client threads (default 32)")
    parser.add_argument("--worker-concurrency", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for n in (int(x) for x in args.workers.split(",")):
        rows = queue_mode(n, runs=args.runs, threads=args.threads, worker_concurrency=args.worker_concurrency)
        results += rows
        for r in rows:  # as they come: a long run that is interrupted still leaves its figures
            print(json.dumps(r), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps({"benchmark": "scale", "results": results}))
        return
    print(f"{'mode':>6} {'workers':>7} {'kind':>9} {'runs':>5} {'runs/s':>7} {'closed median':>14} {'closed p99':>11}")
    for r in results:
        c = r["message_to_closed"]
        print(f"{r['mode']:>6} {r['workers']:>7} {r['kind']:>9} {r['runs']:>5} {r['runs_per_s']:>7.1f} "
              f"{c['median_ms']:>12.1f}ms {c['p99_ms']:>9.1f}ms")
    base = {r["kind"]: r["runs_per_s"] for r in results if r["workers"] == results[0]["workers"]}
    for r in results:
        r["vs_first"] = round(r["runs_per_s"] / base[r["kind"]], 2) if base.get(r["kind"]) else None
    print("runs/s relative to the first worker count: " + ", ".join(
        f"{r['workers']}w {r['kind']} x{r['vs_first']}" for r in results))
    print(f"(PostgreSQL, 1 API + N workers x {args.worker_concurrency} concurrent runs, "
          f"{args.threads} client threads; median of each run's closed_at - opened_at)")


if __name__ == "__main__":
    sys.exit(main())
