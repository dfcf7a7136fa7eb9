"""Aegra (an open Agent Protocol server on PostgreSQL) for bench/scale.py, never a dependency.

Installed by the bench into its own venv under the user's cache directory
(`$XDG_CACHE_HOME/heddle-bench/aegra-venv`), like LangGraph in bench/vs_langgraph.py. Aegra
0.11 needs Python 3.12 or later: `HEDDLE_BENCH_PYTHON312` names the interpreter, otherwise
`python3.12`/`python3.13` on PATH or a pyenv version is used. It serves the same one-node echo
graph as the LangGraph bench (vs_langgraph.GRAPH) on a database of its own on the bench's
PostgreSQL, with its defaults (in-process executor, no Redis), and is driven by the same
client (vs_langgraph.langgraph_calls: Aegra speaks the same Agent Protocol).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import free_port  # noqa: E402
from vs_langgraph import GRAPH  # noqa: E402

AEGRA_SPEC = ("aegra-api==0.11.0", "aegra-cli==0.11.0")


def _python312() -> str:
    named = os.environ.get("HEDDLE_BENCH_PYTHON312")
    candidates = [named] if named else []
    candidates += [shutil.which(n) for n in ("python3.13", "python3.12")]
    candidates += sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.1[2-9]*/bin/python")), reverse=True)
    for candidate in candidates:
        # A pyenv shim exists for every installed version but answers 127 outside its own
        # version's directories: ask the interpreter itself.
        if candidate and Path(candidate).exists() and subprocess.run(
                [candidate, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                capture_output=True).returncode == 0:
            return candidate
    raise RuntimeError("Aegra 0.11 needs Python 3.12+; set HEDDLE_BENCH_PYTHON312 to one")


def aegra_bin() -> Path:
    """The venv's `aegra` command, installing Aegra there on first use."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "heddle-bench" / "aegra-venv"
    ready = cache / ".installed"
    if not ready.exists():
        print(f"installing {' '.join(AEGRA_SPEC)} into {cache} (once)...", file=sys.stderr, flush=True)
        subprocess.run([_python312(), "-m", "venv", "--clear", str(cache)], check=True)
        subprocess.run([str(cache / "bin" / "python"), "-m", "pip", "install", "-q", *AEGRA_SPEC], check=True)
        ready.write_text(" ".join(AEGRA_SPEC) + "\n")
    return cache / "bin" / "aegra"


class AegraServer:
    """`aegra serve` on its own database `dsn` (created and dropped by the caller)."""

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.dir = tempfile.TemporaryDirectory()
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> AegraServer:
        work = Path(self.dir.name)
        (work / "echo_graph.py").write_text(GRAPH)
        (work / "aegra.json").write_text(json.dumps({"graphs": {"echo": "./echo_graph.py:graph"}}))
        env = {**os.environ, "DATABASE_URL": self.dsn, "LOG_LEVEL": "WARNING", "LANGSMITH_TRACING": "false",
               "LANGCHAIN_TRACING_V2": "false", "PYTHONPATH": str(work)}
        self.proc = subprocess.Popen([str(aegra_bin()), "serve", "--host", "127.0.0.1", "--port", str(self.port),
                                      "-c", str(work / "aegra.json")], cwd=work, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)  # `aegra serve` starts uvicorn as a child
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base_url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
            if self.proc.poll() is not None:
                break
        self.__exit__()
        raise RuntimeError("the Aegra server did not start")

    @property
    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc else []

    def __exit__(self, *exc) -> None:
        if self.proc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)  # the CLI and its uvicorn child
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.dir.cleanup()
