"""Real `heddle serve` and `heddle worker` subprocesses in queue mode, for the scale-out tests."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import httpx

from support.net import free_port


def queue_env(db_url: str, **extra: str) -> dict[str, str]:
    """The settings every process of one deployment shares (one bus channel per test)."""
    return {"HEDDLE_DATABASE_URL": db_url, "HEDDLE_EXECUTOR": "queue", "HEDDLE_EVENT_BUS": "postgres",
            "HEDDLE_EVENT_BUS_CHANNEL": f"heddle_t_{secrets.token_hex(4)}", "HEDDLE_PUSHER_APP_ID": "app-1",
            "HEDDLE_PUSHER_KEY": f"key-{secrets.token_hex(4)}", "HEDDLE_PUSHER_SECRET": secrets.token_urlsafe(24),
            "HEDDLE_LOG_LEVEL": "WARNING", "HEDDLE_OUTBOUND_ALLOW_PRIVATE": "true",
            # The tests poll far faster than a person: rate limits are tested in tests/ratelimit.
            "HEDDLE_RATE_LIMIT_PER_KEY": "off", "HEDDLE_RATE_LIMIT_PER_SUBJECT": "off", **extra}


@dataclass
class Proc:
    kind: str
    port: int
    popen: subprocess.Popen
    log_path: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.popen.pid

    def wait_healthy(self, timeout: float = 180) -> Proc:  # generous: shared, loaded CI machines
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.kind} exited {self.popen.returncode}: {self.log()[-3000:]}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"{self.kind} not healthy in {timeout}s: {self.log()[-3000:]}")

    def log(self) -> str:
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def terminate(self, timeout: float = 60) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(timeout)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)


def start(kind: str, env: dict[str, str], tmp_path, *args: str) -> Proc:
    """`heddle serve` (API) or `heddle worker`, its output in a file under tmp_path."""
    port = free_port()
    log_path = str(tmp_path / f"{kind}-{port}.log")
    cli = ["serve", "--port", str(port)] if kind == "serve" else ["worker", "--port", str(port), *args]
    with open(log_path, "w") as log:
        popen = subprocess.Popen([sys.executable, "-m", "heddle", *cli], env={**os.environ, **env},
                                 stdout=log, stderr=subprocess.STDOUT)
    return Proc(kind, port, popen, log_path)
