"""The child processes of `heddle up`: started, watched until healthy, stopped, and explained.

Each child binds its own port (`--port-file` tells us which one, so `--port 0` works) and its
stderr passes through this process line by line, unchanged; the last line is kept, because a
child that refuses to start says why in its last line ("heddle worker: refusing to start: ...").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import httpx


class Child:
    def __init__(self, name: str, command: list[str], port_file: str, host: str):
        self.name = name
        # a wildcard address is probed on loopback
        self.host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
        self.port_file = port_file
        self.last_line = ""
        self.popen = subprocess.Popen([*command, "--port-file", port_file], stderr=subprocess.PIPE,
                                      text=True, errors="replace", bufsize=1)
        self._relay = threading.Thread(target=self._pass_stderr, name=f"stderr-{name}", daemon=True)
        self._relay.start()

    def _pass_stderr(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            if line.strip():
                self.last_line = line.strip()

    @property
    def port(self) -> int | None:
        """The port the child listens on, once it has bound it."""
        try:
            with open(self.port_file) as f:
                return int(f.read())
        except (OSError, ValueError):
            return None

    def healthy(self) -> bool:
        port = self.port
        if port is None:
            return False
        try:
            host = f"[{self.host}]" if ":" in self.host else self.host
            return httpx.get(f"http://{host}:{port}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def failure(self) -> str | None:
        """Why the child has exited ("exited with code 1: <its last line>"), None while it runs."""
        code = self.popen.poll()
        if code is None:
            return None
        self._relay.join(5)  # its last words first
        return f"exited with code {code}" + (f": {self.last_line}" if self.last_line else "")

    def stop(self) -> None:
        if self.popen.poll() is None:  # SIGTERM: workers finish or hand back their runs
            self.popen.send_signal(signal.SIGTERM)

    def wait(self) -> int:
        code = self.popen.wait()
        self._relay.join(5)
        return code


def wait_until_healthy(children: list[Child], seconds: float, stopping) -> str | None:
    """None once every child answers /healthz; else which child did not, and why."""
    deadline = time.monotonic() + seconds
    waiting = list(children)
    while waiting and not stopping():
        for child in list(waiting):
            if (why := child.failure()) is not None:
                return f"{child.name} {why}"
            if child.healthy():
                waiting.remove(child)
        if time.monotonic() > deadline:
            late = waiting[0]
            return f"{late.name} was not healthy within {seconds:g} s (its port: {late.port or 'not bound yet'})"
        time.sleep(0.2)
    return None


def port_file(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name.replace(' ', '-')}.port")
