"""Shared by the benchmarks: a `heddle serve` subprocess on a fresh SQLite file, and statistics."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summary(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    if not ordered:
        return {"n": 0}
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"n": len(ordered), "median_ms": round(statistics.median(ordered), 3), "p99_ms": round(p99, 3)}


def cli(db_url: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "heddle", *args, "--database-url", db_url, "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


class Server:
    """`heddle serve` in a subprocess, so the client never shares the server's GIL."""

    def __init__(self, **env: str):
        self.dir = tempfile.TemporaryDirectory()
        self.db_url = f"sqlite+aiosqlite:///{Path(self.dir.name) / 'bench.db'}"
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "HEDDLE_DATABASE_URL": self.db_url, "HEDDLE_LOG_LEVEL": "WARNING", **env}
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        cli(self.db_url, "migrate")
        self.proc = subprocess.Popen([sys.executable, "-m", "heddle", "serve", "--port", str(self.port)],
                                     env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def __exit__(self, *exc) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait(10)
        self.dir.cleanup()

    def tenant(self, credits: float = 1_000_000) -> tuple[str, str]:
        ws = cli(self.db_url, "workspace", "create", "--name", "bench", "--credits", str(credits))["id"]
        return ws, cli(self.db_url, "key", "create", "--workspace", ws)["secret"]
