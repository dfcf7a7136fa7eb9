"""Who is calling: the result of authenticating a request, in either mode."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from heddle.errors import HeddleError


@dataclass(frozen=True)
class WorkspaceInfo:
    """The workspace settings a request needs, read once per request."""

    id: str
    name: str
    allowed_origins: tuple[str, ...]
    realtime_enabled: bool
    request_secret: str
    mint_url: str | None
    balance_micro: int = 0  # as read at authentication; billing re-checks atomically
    rate_limit_per_key: str | None = None  # the workspace's own rule; None = the server's
    rate_limit_per_subject: str | None = None


@dataclass(frozen=True)
class AuthContext:
    mode: Literal["relay", "direct"]
    workspace: WorkspaceInfo
    key_id: str
    key_mode: str | None = None  # live | test (relay)
    subject: str | None = None  # relay: Service-Subject header; direct: `sub`
    connection_ref: str | None = None  # relay: Service-Connection (id or name); direct: `conn`
    session_token: str | None = None  # direct only: the bearer, for hosted tool calls
    session_token_expires_at: dt.datetime | None = None

    @property
    def workspace_id(self) -> str:
        return self.workspace.id

    def require_subject(self) -> str:
        if not self.subject:
            raise HeddleError("subject_required", "Relay Loom calls need the Service-Subject header "
                              "(form <channel>:<channel_user_id>).")
        return self.subject
