"""The example site (examples/web_chat) beside a real Heddle server, both on loopback ports,
started once for this folder's tests; each test logs in as its own user of the site."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from support.net import free_port
from support.server import LiveServer

REPO = Path(__file__).resolve().parents[3]
USERS = ["stream", "question", "approve", "deny", "message", "outcome", "reconnect", "keys", "errors", "site", "credits", "token", "polling"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("web_chat")
    db = f"sqlite+aiosqlite:///{tmp}/heddle.db"
    # The per-subject rate limit as served by default: the widget must live within it.
    server = LiveServer(database_url=db, rate_limit_per_subject="10/second;300/minute").start()
    port, tool_port = free_port(), free_port()
    users = [f"--user={u}:pw-{u}" for u in USERS]
    proc = subprocess.Popen(
        [sys.executable, "-m", "examples.web_chat", "--heddle", server.base_url, "--database-url", db,
         "--port", str(port), "--toolhost-port", str(tool_port), "--state", str(tmp / "state"), *users],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=(tmp / "site.log").open("w"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the example site exited: {(tmp / 'site.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/login", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the example site did not come up in 120 s")
            time.sleep(0.2)
        setup = json.loads((tmp / "state" / "setup.json").read_text())
        yield {"SITE_URL": url, "HEDDLE_URL": server.base_url, "server": server, "port": port, "setup": setup}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        server.stop()


