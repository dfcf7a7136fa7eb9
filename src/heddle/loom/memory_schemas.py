"""The wire shapes of memory (docs/memory.md): a remembered fact, and the body that adds one."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

from heddle.api.envelope import ReadModel, Timestamp, UUIDStr

# Where a fact came from: an agent's `remember` call, or POST /v1/loom/memories.
MemorySource = TypeAliasType("MemorySource", Literal["tool", "api"])

_EXAMPLE = {"id": "0b7f2c1e-4a52-4df0-9a52-7f1f7f9d8a10", "subject": "web:alice",
            "content": "Pays rent from account ending 4417.", "source": "tool", "agent_id": "agent_3k9x2m",
            "run_id": "4b0d6c1e-6a53-4a53-9d0c-2f5a8f0e7c11", "created_at": "2026-01-01T12:00:00Z"}


class Memory(ReadModel):
    """A fact remembered about a subject, shared by the workspace's agents that remember."""

    model_config = ConfigDict(json_schema_extra={"examples": [_EXAMPLE]})
    id: UUIDStr
    subject: str
    content: str
    source: MemorySource = Field(
        description="`tool`: an agent's `remember` call; `api`: POST /v1/loom/memories.")
    agent_id: str | None = Field(description="The agent whose `remember` call stored it (null for `api`).")
    run_id: UUIDStr | None = Field(description="The run that stored it (null for `api`, or once the run is erased).")
    created_at: Timestamp


class MemoryDeleted(Memory):
    """A fact that was deleted."""

    model_config = ConfigDict(json_schema_extra={"examples": [{**_EXAMPLE, "deleted": True}]})

    deleted: Literal[True]


class AddMemory(BaseModel):
    model_config = ConfigDict(extra="forbid",
                              json_schema_extra={"examples": [{"content": "Prefers replies in French."}]})
    # The cap is HEDDLE_MEMORY_FACT_MAX_CHARS (checked by the service); 8000 is its largest setting.
    content: Annotated[str, Field(min_length=1, max_length=8000)]
