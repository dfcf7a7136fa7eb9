"""Request bodies of the Loom endpoints."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

AgentId = Annotated[str, StringConstraints(pattern=r"^agent_[a-z0-9]{1,60}$")]


class CreateThread(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent: AgentId
    # Only a bound on the work: the subject rules (length after NFC included) are checked by
    # heddle.auth.subjects.canonical_subject, so both sources give the same 400 invalid_subject.
    subject_ref: Annotated[str, Field(min_length=1, max_length=2048)] | None = None


class PostMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: Annotated[str, Field(min_length=1, max_length=32_000)]
    # What to do while the thread's run is busy (CONTRACT section 12): 409, wait, or cancel it.
    if_busy: Literal["reject", "enqueue", "interrupt"] = "reject"


class PostOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: Annotated[str, Field(min_length=1, max_length=64)]
    state: Literal["occurred", "failed"]
    detail: dict[str, Any] | None = None


class PostApproval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: Annotated[str, Field(min_length=1, max_length=64)]
    approved: Annotated[bool, Field(strict=True)]
    reason: Annotated[str, Field(max_length=2000)] | None = None
