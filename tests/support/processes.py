"""Real `heddle` subprocesses that listen, for tests that kill, pause or race whole processes.

Every one is started with `--port 0 --port-file F`: the process binds a port the system picks
and writes it to F. A port chosen by the test and closed again (free_port) can be taken by any
other socket of the suite before the child binds it; a port the child bound itself cannot.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence

import httpx

# Start-up imports the whole service; on a loaded two-core CI machine that has been seen to take
# over 30 s, so the wait is generous. A process that exits early fails at once with its output.
START_SECONDS = 120


def spawn(args: Sequence[str], env: dict[str, str] | None = None, *, environ: Mapping[str, str] | None = None,
          **popen) -> tuple[subprocess.Popen, str]:
    """`heddle <args> --port 0 --port-file F` with `env` over `environ` (default: this process's);
    the process and F (read it with `bound_port`)."""
    fd, port_file = tempfile.mkstemp(prefix="heddle-port-")
    os.close(fd)  # empty until the child has bound its port and replaced it
    proc = subprocess.Popen([sys.executable, "-m", "heddle", *args, "--port", "0", "--port-file", port_file],
                            env={**(os.environ if environ is None else environ), **(env or {})}, **popen)
    return proc, port_file


def bound_port(proc: subprocess.Popen, port_file: str, output: Callable[[], str],
               timeout: float = START_SECONDS) -> int:
    """The port the process bound; fails with the process's output if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(port_file) as f:
            text = f.read().strip()
        if text:
            os.remove(port_file)
            return int(text)
        if proc.poll() is not None:
            raise RuntimeError(f"heddle {proc.args[3]} exited {proc.returncode} before listening:\n"
                               f"{output()[-3000:]}")
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"heddle {proc.args[3]} did not listen in {timeout} s:\n{output()[-3000:]}")


def wait_healthy(proc: subprocess.Popen, port: int, output: Callable[[], str], timeout: float = START_SECONDS) -> None:
    """Until /healthz answers 200; fails with the process's output if it exits or is late."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"heddle {proc.args[3]} exited {proc.returncode}:\n{output()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"heddle {proc.args[3]} not healthy in {timeout} s:\n{output()[-3000:]}")


def serve_process(db_url: str, *, env: dict[str, str] | None = None,
                  args: tuple[str, ...] = ("--dev",)) -> tuple[subprocess.Popen, str]:
    """Start `heddle serve` over `db_url`; once /healthz answers 200, the process and its base URL."""
    environ = {"HEDDLE_DATABASE_URL": db_url, "HEDDLE_LOG_LEVEL": "WARNING", **(env or {})}
    proc, port_file = spawn(["serve", *args], environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def output() -> str:  # read once the process has exited (or been killed)
        proc.wait(10)
        return proc.stderr.read().decode()

    port = bound_port(proc, port_file, output)
    wait_healthy(proc, port, output)
    return proc, f"http://127.0.0.1:{port}"


def serve_in(folder, environ: Mapping[str, str], args: Sequence[str] = ()) -> tuple[subprocess.Popen, int,
                                                                                  Callable[[], str]]:
    """`heddle serve` run from `folder` (its ./heddle.db), as a person starts it; once healthy, the
    process, its port and `output()` (its stderr, read once it has exited or been stopped)."""
    proc, port_file = spawn(["serve", *args], environ=environ, cwd=folder, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)

    def output() -> str:
        proc.wait(10)
        return proc.stderr.read()

    port = bound_port(proc, port_file, output)
    wait_healthy(proc, port, output)
    return proc, port, output
