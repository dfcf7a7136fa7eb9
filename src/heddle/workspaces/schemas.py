"""Read model of `GET /v1/workspace`."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from heddle.api.envelope import Credits, ReadModel


class KeyRef(ReadModel):
    id: str = Field(description="The API key's public id, `key_…`.")
    mode: Literal["live", "test"]


class Workspace(ReadModel):
    """The calling workspace and the key that called."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": "ws_3k9x2m", "name": "Acme", "balance_credits": 99, "key": {"id": "key_7h2k", "mode": "live"},
        "realtime": True}]})
    id: str = Field(description="`ws_…`")
    name: str
    balance_credits: Credits
    key: KeyRef
    realtime: bool = Field(description="Whether thread events are published for this workspace.")
