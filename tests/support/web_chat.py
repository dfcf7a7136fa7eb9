"""The example caller site (examples/web_chat) beside a real Heddle server, both on loopback
ports: `python -m examples.web_chat` provisions the workspace through the heddle CLI, then serves
its login, mint endpoint and widget page, with the example tool host."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from support.net import free_port
from support.server import LiveServer

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def web_chat_site(tmp: Path, users: list[str], **server_settings: Any) -> Iterator[dict[str, Any]]:
    """Yields {"SITE_URL", "HEDDLE_URL", "server", "port", "database_url", "setup"} (`setup`: what
    the example provisioned, its state/setup.json); each user NAME logs in with the password
    `pw-NAME`."""
    db = f"sqlite+aiosqlite:///{tmp}/heddle.db"
    server = LiveServer(database_url=db, **server_settings).start()
    port, tool_port = free_port(), free_port()
    log = tmp / "site.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "examples.web_chat", "--heddle", server.base_url, "--database-url", db,
         "--port", str(port), "--toolhost-port", str(tool_port), "--state", str(tmp / "state"),
         *[f"--user={u}:pw-{u}" for u in users]],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # a loaded machine provisions slowly
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the example site exited: {log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/login", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the example site did not come up in 300 s")
            time.sleep(0.2)
        setup = json.loads((tmp / "state" / "setup.json").read_text())
        yield {"SITE_URL": url, "HEDDLE_URL": server.base_url, "server": server, "port": port, "database_url": db,
               "setup": setup}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        server.stop()
