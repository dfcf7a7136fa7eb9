"""Idle connections held against `heddle serve` (issue 26), for bench/abuse.py.

- `idle_streams`: one attacker key opens `n` run event streams (`GET /v1/loom/runs/{id}/events`
  on a run that waits for input, so none ends by itself), spread over several loopback source
  addresses, and holds every connection open without reading.
- `idle_sockets`: one client address opens `n` TCP connections, each sending
  `GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n` (a head that never ends), and stalls.
- `idle_websockets`: one client address opens `n` WebSockets to the built-in realtime server
  with the public app key, never subscribes, and never reads or answers again (not even a close
  frame); each is counted by its first frame: `established`, or `4100` (refused at a cap).

`held()` runs one of them in a child process (`python bench/abuse_idle.py ...`): the attacker's
sockets and its event loop then cost the measuring client nothing, as another machine's would.
The child prints what the server answered (status counts) as one JSON line, holds every
connection until its stdin closes, then closes them and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import resource
import sys

STALLED_HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
OPEN_AT_ONCE = 256  # connections being opened concurrently


def raise_open_files(needed: int) -> int:
    """This process needs a descriptor per socket it holds: raise the soft limit (to the hard one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed + 256 and soft < hard:
        soft = hard if hard != resource.RLIM_INFINITY else needed + 256
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft


async def _status(reader: asyncio.StreamReader, timeout: float) -> int:
    """The status of the first answer on a connection; 0 when none came in time, -1 when closed."""
    try:
        line = await asyncio.wait_for(reader.readline(), timeout)
    except (TimeoutError, ConnectionError):
        return 0
    if not line:
        return -1
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else -1


async def _open_many(port: int, sources: list[str], n: int, payload: bytes, answer_within: float):
    """n connections, source addresses taken in turn; each sends `payload` and, if it gets an
    answer within `answer_within` s, its status is counted (0: none in time, -1: closed, 'refused':
    the connect itself failed)."""
    gate = asyncio.Semaphore(OPEN_AT_ONCE)
    statuses: collections.Counter = collections.Counter()
    held: list[asyncio.StreamWriter] = []

    async def one(i: int) -> None:
        async with gate:
            try:
                source = sources[i % len(sources)]
                reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
            except OSError:
                statuses["refused"] += 1
                return
            writer.write(payload)
            held.append(writer)
        statuses[await _status(reader, answer_within)] += 1

    await asyncio.gather(*(one(i) for i in range(n)))
    return held, dict(statuses)


async def idle_streams(port: int, n: int, headers: dict[str, str], run_id: str, sources: list[str]):
    head = [f"GET /v1/loom/runs/{run_id}/events HTTP/1.1", "Host: 127.0.0.1", "Accept: text/event-stream",
            *(f"{k}: {v}" for k, v in headers.items())]
    return await _open_many(port, sources, n, ("\r\n".join(head) + "\r\n\r\n").encode(), answer_within=15)


async def idle_sockets(port: int, n: int, source: str):
    # Answers that come within a second are counted (a refused connection's 503); a stalled head
    # admitted under the caps gets its 408 only at the head timeout, after the measurement.
    return await _open_many(port, [source], n, STALLED_HEAD, answer_within=1.0)


async def _websocket(port: int, source: str, path: str) -> tuple[str, asyncio.StreamWriter | None]:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    except OSError:
        return "refused", None
    writer.write((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    seen = b""
    try:
        async with asyncio.timeout(15):
            while b"connection_established" not in seen and b"4100" not in seen:
                chunk = await reader.read(4096)
                if not chunk:
                    return ("closed" if seen else "no answer"), writer
                seen += chunk
    except TimeoutError:
        return "no answer", writer
    return ("established" if b"connection_established" in seen else "4100"), writer


async def idle_websockets(port: int, n: int, source: str, app_key: str):
    gate = asyncio.Semaphore(OPEN_AT_ONCE)
    path = f"/app/{app_key}?protocol=7&client=js&version=8.6.0"

    async def one() -> tuple[str, asyncio.StreamWriter | None]:
        async with gate:
            return await _websocket(port, source, path)

    results = await asyncio.gather(*(one() for _ in range(n)))
    return [w for _, w in results if w is not None], dict(collections.Counter(label for label, _ in results))


def close_all(writers: list[asyncio.StreamWriter]) -> None:
    for writer in writers:
        writer.close()


@contextlib.asynccontextmanager
async def held(kind: str, port: int, n: int, *, run_id: str = "", headers: dict[str, str] | None = None,
               sources: list[str] | None = None):
    """Open the connections in a child process; yields the status counts while they are held."""
    args = [sys.executable, __file__, kind, "--port", str(port), "--n", str(n),
            "--sources", ",".join(sources or ["127.0.0.2"]), "--run-id", run_id,
            "--headers", json.dumps(headers or {})]
    child = await asyncio.create_subprocess_exec(*args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    try:
        line = await asyncio.wait_for(child.stdout.readline(), 300)
        if not line:
            raise RuntimeError(f"the {kind} attacker exited early")
        yield {int(k) if k.lstrip("-").isdigit() else k: v for k, v in json.loads(line).items()}
    finally:
        child.stdin.close()
        try:
            await asyncio.wait_for(child.wait(), 60)
        except TimeoutError:
            child.kill()


async def _child(args: argparse.Namespace) -> None:
    raise_open_files(args.n)
    sources = args.sources.split(",")
    if args.kind == "streams":
        writers, answered = await idle_streams(args.port, args.n, json.loads(args.headers), args.run_id, sources)
    elif args.kind == "websockets":
        writers, answered = await idle_websockets(args.port, args.n, sources[0], args.run_id)  # run_id: the app key
    else:
        writers, answered = await idle_sockets(args.port, args.n, sources[0])
    print(json.dumps(answered), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes it
    close_all(writers)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("streams", "sockets", "websockets"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--sources", default="127.0.0.2")
    parser.add_argument("--run-id", default="")
    parser.add_argument("--headers", default="{}")
    asyncio.run(_child(parser.parse_args()))
