"""Request and read models of the realtime endpoints (config and channel authorization)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from heddle.api.envelope import ReadModel


class RealtimeConfig(ReadModel):
    """What pusher-js needs to connect; never a secret."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "enabled": True, "key": "heddle", "cluster": "mt1", "ws_host": "127.0.0.1", "ws_port": 8080,
        "force_tls": False}]})
    enabled: bool = Field(description="False: no events are published; poll GET /v1/loom/runs/{id}.")
    key: str = Field(description="The realtime app key (public).")
    cluster: str
    ws_host: str
    ws_port: int
    force_tls: bool


class RealtimeAuthRequest(BaseModel):
    """What pusher-js posts (form-encoded) to authorize a private channel; JSON works too."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "socket_id": "1234.5678", "channel_name": "private-thread-0f8b7a52-2d7e-4c1e-8a5e-1f3b9c6d2a40"}]})
    # The patterns are heddle.realtime.signing's own checks.
    socket_id: str = Field(pattern=r"^[0-9]{1,20}\.[0-9]{1,20}$", description="pusher-js's socket id.")
    channel_name: str = Field(pattern=r"^private-thread-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                              description="`private-thread-<thread uuid>`; the caller's subject must own it.")


class ChannelAuth(ReadModel):
    auth: str = Field(description="`<key>:<hex HMAC-SHA256>` (Pusher's scheme).")


class ChannelAuthEnvelope(BaseModel):
    """The envelope, plus `auth` at the top level where pusher-js's default authorizer reads it."""

    status: str = Field("success", json_schema_extra={"const": "success"})
    data: ChannelAuth
    auth: str
