"""Network helpers for tests."""

from __future__ import annotations

import contextlib
import random
import socket


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


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
