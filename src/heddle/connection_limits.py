"""How many HTTP connections the server holds open: in all, and per client address.

uvicorn has no cap of its own that refuses a connection before it costs anything (its
`limit_concurrency` answers 503 only once a request head is complete, so sockets that never
finish a head are not refused at all): one client holding 19,900 half-sent heads used every file
descriptor of the process and real requests failed until it let go. `ConnectionLimits` is the
ledger the HTTP protocol (`heddle/http_protocol.py`) consults when a connection is made; a
connection over either cap is answered 503 `service_unavailable` with `Connection: close` and
closed, and never counted.

The address is the TCP peer's. Behind a reverse proxy every connection comes from the proxy, so
there the per-address cap must be off (`HEDDLE_MAX_CONNECTIONS_PER_ADDRESS=0`) or above the
proxy's upstream connections, and the proxy limits its clients (docs/operations.md).

WebSocket connections leave this ledger when they upgrade: the realtime server keeps its own
caps (`heddle/realtime/admission.py`), so a flood of sockets on one cannot starve the other.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class ConnectionLimits:
    def __init__(self, *, max_total: int, max_per_address: int, metrics: Any = None):
        self.max_total = max_total  # 0 = no cap
        self.max_per_address = max_per_address  # 0 = no cap
        self.total = 0
        self.by_address: Counter[str] = Counter()
        self._metrics = metrics

    def admit(self, address: str | None) -> str | None:
        """Count a new connection in; the reason it is refused instead ("total" or "address")."""
        if self.max_total and self.total >= self.max_total:
            return self._refused("total")
        if self.max_per_address and address is not None and self.by_address[address] >= self.max_per_address:
            return self._refused("address")
        self.total += 1
        if address is not None:
            self.by_address[address] += 1
        if self._metrics is not None:
            self._metrics.connections_open.set(self.total)
        return None

    def release(self, address: str | None) -> None:
        """Count a connection out (closed, or handed to the WebSocket server)."""
        self.total -= 1
        if address is not None:
            left = self.by_address[address] - 1
            if left > 0:
                self.by_address[address] = left
            else:
                del self.by_address[address]
        if self._metrics is not None:
            self._metrics.connections_open.set(self.total)

    def _refused(self, reason: str) -> str:
        if self._metrics is not None:
            self._metrics.connections_refused.labels(reason).inc()
        return reason

    def timed_out(self) -> None:
        if self._metrics is not None:
            self._metrics.head_timeouts.inc()
