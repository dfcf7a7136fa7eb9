"""Kill the server process mid-run; on restart the run is recovered and finishes.

The model is an OpenAI-compatible class served by a local fake whose first reply hangs, so
the run is provably in the middle of a model turn when `heddle serve` is killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from support.loom import open_thread, post, wait_run
from support.net import wait_started
from support.processes import serve_process

pytestmark = pytest.mark.slow


class FakeChatServer:
    """Speaks just enough of POST /v1/chat/completions; the first request hangs."""

    def __init__(self):
        self.requests = 0
        self.first_seen = threading.Event()

        async def completions(request: Request):
            body = await request.json()
            assert body["messages"][-1]["role"] == "user"
            self.requests += 1
            if self.requests == 1:
                self.first_seen.set()
                import asyncio

                await asyncio.sleep(60)  # the server under test is killed meanwhile
            return JSONResponse({
                "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Recovered and done."}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
            })

        app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
        # bound here, on a port the system picks: nothing else can take it before the server starts
        sock = socket.create_server(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        wait_started(self.server, self.thread)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True


def _serve(db_url: str, model_port: int) -> tuple[subprocess.Popen, str]:
    return serve_process(db_url, env={
        "HEDDLE_RATE_LIMIT_PER_SUBJECT": "off",  # wait_run polls far faster than a person
        "HEDDLE_MODEL_CLASSES": json.dumps({"remote": {
            "provider": "openai", "model": "fake-1", "base_url": f"http://127.0.0.1:{model_port}/v1",
            "api_key": "test-key", "max_retries": 0, "timeout": 120}})})


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_killed_mid_run_then_recovered(backend, tmp_path, request, monkeypatch):
    from support.server import LiveServer
    from support.tenants import make_tenant

    db_url = (f"sqlite+aiosqlite:///{tmp_path / 'crash.db'}" if backend == "sqlite"
              else request.getfixturevalue("pg_database_factory")())
    # Seed with an in-process server on the same database (it also runs the migrations).
    monkeypatch.setenv("HEDDLE_MODEL_CLASSES", json.dumps({"remote": {"provider": "openai", "model": "x",
                                                                     "base_url": "http://127.0.0.1:9/v1", "api_key": "k"}}))
    seed = LiveServer(database_url=db_url, model_classes=os.environ["HEDDLE_MODEL_CLASSES"]).start()
    tenant = make_tenant(seed)
    agent = tenant.add_agent({"name": "remote", "model_class": "remote", "instructions": "", "tools": []},
                             classes=("remote",))
    seed.stop()

    with FakeChatServer() as fake:
        proc, base = _serve(db_url, fake.port)
        with httpx.Client(base_url=base, timeout=10) as http:
            h = tenant.headers("web:crash")
            run_id = post(http, h, open_thread(http, h, agent), "please work")["run_id"]
            assert fake.first_seen.wait(15), "the model was never called"
            assert http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]["state"] == "running"
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

        if backend == "postgres":
            # Another process's lease must expire before it is reclaimed; shorten it by hand.
            from sqlalchemy import text

            from heddle.db.base import Database

            async def expire():
                db = Database(db_url)
                async with db.transaction() as s:
                    await s.execute(text("UPDATE runs SET lease_expires_at = now() - interval '1 minute'"))
                await db.dispose()

            import asyncio

            asyncio.run(expire())

        proc, base = _serve(db_url, fake.port)  # a new process, on a port of its own
        try:
            with httpx.Client(base_url=base, timeout=10) as http:
                run = wait_run(http, h, run_id, states=("closed", "failed"), timeout=20)
                assert run["state"] == "closed", run
                assert run["latest_message"]["content"] == "Recovered and done."
                trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
                assert len(trace["turns"]) == 1  # the interrupted turn was never recorded or charged
                assert trace["turns"][0]["input_tokens"] == 12
            assert fake.requests == 2
        finally:
            proc.terminate()
            proc.wait(10)
