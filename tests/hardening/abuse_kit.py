"""Helpers for the hardening tests: raw half-sent requests and latency rounds."""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Callable

import httpx


def half_sent(port: int, path: str, headers: dict[str, str], *, declared: int = 200,
              sent: bytes = b'{"socket_id": "1') -> socket.socket:
    """A raw connection that sent the request head and part of its body, and now waits."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
            f"Content-Length: {declared}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + sent)
    return sock


def timed(calls: list[Callable[[], httpx.Response]], rounds: int) -> tuple[list[float], list[int]]:
    """Latency (s) and status of every call, `rounds` times over the list."""
    latencies, statuses = [], []
    for _ in range(rounds):
        for call in calls:
            started = time.perf_counter()
            resp = call()
            latencies.append(time.perf_counter() - started)
            statuses.append(resp.status_code)
    return latencies, statuses


def p50(values: list[float]) -> float:
    return statistics.median(values)
