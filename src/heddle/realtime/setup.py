"""Choose the realtime provider from settings: built-in server, hosted Pusher, or off."""

from __future__ import annotations

import secrets
from typing import Any

from heddle.config import Settings
from heddle.realtime.hub import RealtimeHub
from heddle.realtime.publish import BuiltinPublisher, PusherPublisher


class Realtime:
    """What the rest of Heddle needs from realtime: a publisher, credentials and public config."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.mode = settings.realtime
        self.hub: RealtimeHub | None = None
        self.publisher: Any = None
        if self.mode == "builtin":
            # Without configured credentials the built-in server makes its own per process.
            self.key = settings.pusher_key or f"heddle-{secrets.token_hex(8)}"
            self.secret = settings.pusher_secret or secrets.token_urlsafe(32)
            self.hub = RealtimeHub()
            self.publisher = BuiltinPublisher(self.hub)
        elif self.mode == "pusher":
            missing = [n for n in ("pusher_app_id", "pusher_key", "pusher_secret") if not getattr(settings, n)]
            if missing:
                raise ValueError(f"HEDDLE_REALTIME=pusher needs {', '.join('HEDDLE_' + m.upper() for m in missing)}")
            self.key, self.secret = settings.pusher_key, settings.pusher_secret
            self.publisher = PusherPublisher(
                app_id=settings.pusher_app_id, key=settings.pusher_key, secret=settings.pusher_secret,
                cluster=settings.pusher_cluster, host=settings.pusher_host or None, port=settings.pusher_port,
                ssl=settings.pusher_ssl)
        else:
            self.key, self.secret = "", ""

    def enabled(self, workspace_enabled: bool) -> bool:
        return self.mode != "off" and workspace_enabled

    def public_config(self, workspace_enabled: bool) -> dict[str, Any]:
        s = self.settings
        if self.mode == "pusher":
            host = s.pusher_host or f"ws-{s.pusher_cluster}.pusher.com"
            port = s.pusher_port or (443 if s.pusher_ssl else 80)
            force_tls = s.pusher_ssl
        else:
            host = s.realtime_public_host or s.host
            port = s.realtime_public_port or s.port
            force_tls = s.realtime_force_tls
        return {"enabled": self.enabled(workspace_enabled), "key": self.key, "cluster": s.pusher_cluster,
                "ws_host": host, "ws_port": port, "force_tls": force_tls}
