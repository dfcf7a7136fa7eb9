"""Shared by the benchmarks: a `heddle serve` subprocess on a fresh SQLite file, and statistics."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h11
import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wakeups(pid: int) -> int:
    """How many times the threads of this process went to sleep and were woken again (the
    voluntary context switches of each thread, /proc): an idle process's cost in a count, which
    unlike its CPU does not depend on how fast or how busy the machine is. 0 for a process gone
    or on another host."""
    total = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            total += int(next(line for line in status.read_text().splitlines()
                              if line.startswith("voluntary_ctxt_switches")).split()[1])
        except (OSError, StopIteration):  # a thread that ended meanwhile
            continue
    return total


def cpu_snapshot(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each of these processes and all their descendants (/proc)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        stats[pid] = fields
        children.setdefault(int(fields[1]), []).append(pid)
    out: dict[int, float] = {}
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in out or pid not in stats:
            continue
        out[pid] = (int(stats[pid][11]) + int(stats[pid][12])) / os.sysconf("SC_CLK_TCK")
        todo += children.get(pid, [])
    return out


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two snapshots (a process that appeared counts from zero; one
    that exited meanwhile is lost, so keep long-lived processes, such as pooled backends)."""
    return sum(v - before.get(pid, 0.0) for pid, v in after.items())


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



def create_agent(db_url: str, workspace: str, agent_yaml: str) -> str:
    """`heddle agent create` from an agent file's text; returns the agent id."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(agent_yaml)
    try:
        return cli(db_url, "agent", "create", "--workspace", workspace, "--file", f.name)["id"]
    finally:
        os.unlink(f.name)

class Server:
    """`heddle serve` in a subprocess, so the client never shares the server's GIL."""

    def __init__(self, **env: str):
        self.dir = tempfile.TemporaryDirectory()
        self.db_url = f"sqlite+aiosqlite:///{Path(self.dir.name) / 'bench.db'}"
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        # Rate limits off: the benchmarks measure the server, not the limiter's refusals.
        self.env = {**os.environ, "HEDDLE_DATABASE_URL": self.db_url, "HEDDLE_LOG_LEVEL": "WARNING",
                    "HEDDLE_RATE_LIMIT_PER_KEY": "off", "HEDDLE_RATE_LIMIT_PER_SUBJECT": "off", **env}
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        cli(self.db_url, "migrate")
        # BENCH_WRAP: a script to run the server under (a profiler), given `-m heddle serve ...`
        wrap = [os.environ["BENCH_WRAP"]] if os.environ.get("BENCH_WRAP") else []
        self.proc = subprocess.Popen([sys.executable, *wrap, "-m", "heddle", "serve", "--port", str(self.port)],
                                     env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120  # a loaded 2-core machine can take tens of seconds to import
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError("server did not start")

    def __exit__(self, *exc) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait(10)
        self.dir.cleanup()

    def tenant(self, credits: float = 1_000_000) -> tuple[str, str]:
        ws = cli(self.db_url, "workspace", "create", "--name", "bench", "--credits", str(credits))["id"]
        return ws, cli(self.db_url, "key", "create", "--workspace", ws)["secret"]


class WireClient:
    """One keep-alive HTTP/1.1 connection, framed with h11 over asyncio streams.

    For latency benchmarks: httpx (pool, anyio, its own models) adds 1-3 ms per request on our
    2-vCPU CI machine when the client is not in a tight loop, which would swamp a few-ms server
    figure. This measures the server and the socket; benches say which client they used.
    """

    def __init__(self, base_url: str):
        host, _, port = base_url.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)
        self._reader = self._writer = None
        self._conn = None

    async def __aenter__(self) -> WireClient:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        sock = self._writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conn = h11.Connection(h11.CLIENT)
        return self

    async def __aexit__(self, *exc) -> None:
        self._writer.close()

    async def request(self, method: str, path: str, headers: dict[str, str] | None = None,
                      json_body: object = None) -> tuple[int, object]:
        body = json.dumps(json_body).encode() if json_body is not None else b""
        head = [("host", f"{self.host}:{self.port}"), *(headers or {}).items()]
        if json_body is not None:
            head += [("content-type", "application/json"), ("content-length", str(len(body)))]
        out = self._conn.send(h11.Request(method=method, target=path, headers=head))
        if body:
            out += self._conn.send(h11.Data(data=body))
        out += self._conn.send(h11.EndOfMessage())
        self._writer.write(out)
        status, chunks = 0, []
        while True:
            event = self._conn.next_event()
            if event is h11.NEED_DATA:
                self._conn.receive_data(await self._reader.read(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._conn.start_next_cycle()
                raw = b"".join(chunks)
                return status, json.loads(raw) if raw else None
