"""`heddle serve` as a real subprocess, for tests that kill, pause or race whole processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx

# Start-up imports the whole service; on a loaded two-core CI machine that has been seen to take
# over 30 s, so the wait is generous. A process that exits early fails at once with its stderr.
START_SECONDS = 120


def serve_process(port: int, db_url: str, *, env: dict[str, str] | None = None,
                  args: tuple[str, ...] = ("--dev",)) -> subprocess.Popen:
    """Start `heddle serve` on `port` over `db_url`; return once /healthz answers 200."""
    environ = {**os.environ, "HEDDLE_DATABASE_URL": db_url, "HEDDLE_LOG_LEVEL": "WARNING", **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "heddle", "serve", "--port", str(port), *args],
                            env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"heddle serve did not come up: {proc.stderr.read().decode()[-2000:]}")
