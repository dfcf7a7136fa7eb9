"""Network helpers for tests."""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def bound_socket(host: str = "127.0.0.1") -> socket.socket:
    """A socket bound to a port the system picks, for uvicorn's `run(sockets=[...])`.

    Bound before the server's thread starts, so nothing can be given the port in between.
    `free_port()` and a bind later left that window: the port is an ephemeral one, which the
    kernel may hand to any outgoing connection of the suite (with two pytest-xdist workers, to the
    other worker's), and uvicorn's bind then failed inside its thread.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


def wait_started(server, thread: threading.Thread, timeout: float = 60) -> None:
    """Until the uvicorn `server` running in `thread` has started; an error, never a wait for
    ever, if its thread ended first (a failed bind, a failed start-up) or it took `timeout`."""
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the test server's thread ended before the server started")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the test server did not start in {timeout:.0f} s")
        time.sleep(0.01)


def port_block(count: int, host: str = "127.0.0.1") -> int:
    """The first of `count` consecutive free ports, below the ephemeral range.

    For a layout whose ports follow one another (`heddle up --port P`: workers on P+1, ...). The
    kernel hands out ephemeral ports to every outgoing connection of the suite, so a port picked
    there and closed again may be taken before the process binds it; below that range only an
    explicit bind can take it, and the suite's listeners bind port 0 (which is in the range).
    """
    low = _ephemeral_low()
    for _ in range(200):
        base = random.randrange(10000, low - count)
        try:
            with contextlib.ExitStack() as stack:
                for port in range(base, base + count):
                    stack.enter_context(socket.create_server((host, port)))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {count} consecutive free ports below {low}")


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default
