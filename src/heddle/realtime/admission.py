"""Who may hold a WebSocket on the built-in realtime server before proving anything.

Opening a socket needs only the public app key, so capacity was free for the taking: one
client opened 10,000 connections and everyone after got `4100 Over capacity`. Two caps apply
when a socket is opened, before its `pusher:connection_established`:

- **per client address** (`HEDDLE_REALTIME_MAX_CONNECTIONS_PER_ADDRESS`), all its sockets;
- **unauthenticated in all** (`HEDDLE_REALTIME_MAX_UNAUTHENTICATED`): sockets that have not yet
  subscribed to a channel with a valid signature from the channel-auth endpoint (which needs a
  workspace key or a session token). A socket leaves this pool at its first such subscription.

A refused socket gets `pusher:error` and a close with 4100 (Pusher's "over capacity": pusher-js
backs off, then reconnects), and `heddle_realtime_connections_refused_total{limit}` counts it.
The hub's own total (`HEDDLE_REALTIME_MAX_CONNECTIONS`) still bounds every socket.

The address is the one uvicorn reports: the TCP peer's, or the client's from
`X-Forwarded-For` when the peer is a trusted proxy (uvicorn's `--forwarded-allow-ips`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from heddle.realtime import protocol


@dataclass
class Ticket:
    """One admitted socket: its address, and whether it has authenticated yet."""

    address: str | None
    authenticated: bool = False
    left: bool = False


class Admission:
    def __init__(self, *, per_address: int, unauthenticated: int, metrics=None):
        self.per_address = per_address  # 0 = no cap
        self.unauthenticated_cap = unauthenticated  # 0 = no cap
        self.by_address: Counter[str] = Counter()
        self.unauthenticated = 0
        self.metrics = metrics

    def admit(self, address: str | None) -> Ticket | tuple[int, str]:
        """A ticket for a new socket, or the (close code, message) it is refused with."""
        if self.per_address and address is not None and self.by_address[address] >= self.per_address:
            return self._refused("address", f"Over capacity: {self.per_address} connections from this address")
        if self.unauthenticated_cap and self.unauthenticated >= self.unauthenticated_cap:
            return self._refused("unauthenticated", "Over capacity: too many connections not yet subscribed")
        if address is not None:
            self.by_address[address] += 1
        self.unauthenticated += 1
        return Ticket(address)

    def authenticated(self, ticket: Ticket) -> None:
        """The socket subscribed with a valid signature: it no longer counts as unauthenticated."""
        if not ticket.authenticated and not ticket.left:
            ticket.authenticated = True
            self.unauthenticated -= 1

    def leave(self, ticket: Ticket) -> None:
        if ticket.left:
            return
        ticket.left = True
        if not ticket.authenticated:
            self.unauthenticated -= 1
        if ticket.address is not None:
            left = self.by_address[ticket.address] - 1
            if left > 0:
                self.by_address[ticket.address] = left
            else:
                del self.by_address[ticket.address]

    def _refused(self, limit: str, message: str) -> tuple[int, str]:
        if self.metrics is not None:
            self.metrics.realtime_refused.labels(limit).inc()
        return protocol.OVER_CAPACITY, message
