"""Choose the realtime provider from settings: built-in server, hosted Pusher, or off."""

from __future__ import annotations

import secrets
from typing import Any

from heddle.config import Settings
from heddle.realtime.bus import BusPublisher, BusRelay, build_bus
from heddle.realtime.hub import RealtimeHub
from heddle.realtime.publishers import build_publisher


class Realtime:
    """What the rest of Heddle needs from realtime: a publisher, credentials and public config."""

    def __init__(self, settings: Settings, *, serve_sockets: bool = True):
        self.settings = settings
        self.mode = settings.realtime
        self.hub: RealtimeHub | None = None
        self.publisher: Any = None
        self.relay: BusRelay | None = None  # shared bus -> this process's hub
        if self.mode == "builtin":
            # Without configured credentials the built-in server makes its own per process
            # (several processes must share them: heddle.deployment refuses otherwise).
            self.key = settings.pusher_key or f"heddle-{secrets.token_hex(8)}"
            self.secret = settings.pusher_secret or secrets.token_urlsafe(32)
            self.hub = RealtimeHub(max_connections=settings.realtime_max_connections) if serve_sockets else None
            if settings.event_bus == "memory":
                self.publisher = build_publisher("builtin", self.hub, settings) if self.hub else None
            else:  # every process publishes to the bus; the ones serving sockets relay it
                bus = build_bus(settings.event_bus, database_url=settings.database_url,
                                redis_url=settings.redis_url, channel=settings.event_bus_channel)
                self.publisher = BusPublisher(bus)
                if self.hub is not None:
                    self.relay = BusRelay(bus, self.hub)
        elif self.mode == "pusher":
            self.publisher = build_publisher("pusher", None, settings)  # ValueError names missing settings
            self.key, self.secret = settings.pusher_key, settings.pusher_secret
        else:
            self.key, self.secret = "", ""

    async def start(self) -> None:
        if self.relay is not None:
            await self.relay.start()

    async def aclose(self) -> None:
        """Stop relaying, send what is pending, close every socket."""
        if self.relay is not None:
            await self.relay.aclose()
        if self.publisher is not None:
            await self.publisher.aclose()
        if self.hub is not None:
            await self.hub.aclose()

    def enabled(self, workspace_enabled: bool) -> bool:
        return self.mode != "off" and workspace_enabled

    def public_config(self, workspace_enabled: bool) -> dict[str, Any]:
        s = self.settings
        if self.mode == "pusher" and not s.realtime_public_host:
            host = s.pusher_host or f"ws-{s.pusher_cluster}.pusher.com"
            port = s.realtime_public_port or s.pusher_port or (443 if s.pusher_ssl else 80)
            force_tls = s.pusher_ssl
        else:  # the built-in server, or a self-hosted Pusher server browsers reach by another name
            # (Heddle publishes to soketi at http://127.0.0.1:6001; browsers use wss://rt.example.com)
            host = s.realtime_public_host or s.host
            port = s.realtime_public_port or s.port
            force_tls = s.realtime_force_tls
        return {"enabled": self.enabled(workspace_enabled), "key": self.key, "cluster": s.pusher_cluster,
                "ws_host": host, "ws_port": port, "force_tls": force_tls}
