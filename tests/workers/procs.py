"""Real `heddle serve` and `heddle worker` subprocesses in queue mode, for the scale-out tests."""

from __future__ import annotations

import secrets
import signal
import subprocess
from dataclasses import dataclass, field
from functools import cached_property

from support.processes import bound_port, spawn, wait_healthy


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
    popen: subprocess.Popen
    port_file: str
    log_path: str = ""
    extra: dict = field(default_factory=dict)

    @cached_property
    def port(self) -> int:
        """The port the process bound (it was started with --port 0); waits until it has."""
        return bound_port(self.popen, self.port_file, self.log)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.popen.pid

    def wait_healthy(self, timeout: float = 180) -> Proc:  # generous: shared, loaded CI machines
        wait_healthy(self.popen, self.port, self.log, timeout)
        return self

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
    """`heddle serve` (API) or `heddle worker` on a port it picks, its output in a file under tmp_path."""
    log_path = str(tmp_path / f"{kind}-{secrets.token_hex(4)}.log")
    with open(log_path, "w") as log:
        popen, port_file = spawn([kind, *args], env, stdout=log, stderr=subprocess.STDOUT)
    return Proc(kind, popen, port_file, log_path)
