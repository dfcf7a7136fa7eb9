"""Request body and read model of end users' feedback on assistant messages (issue 46)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

from heddle.api.envelope import NullableTimestamp, ReadModel, UUIDStr

# A comment is a sentence or a paragraph, never a document.
COMMENT_MAX = 2000
Rating = TypeAliasType("Rating", Literal["up", "down"])


class PostFeedback(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"rating": "down", "comment": "It named the wrong bank."}]})
    rating: Rating
    comment: Annotated[str, Field(max_length=COMMENT_MAX)] | None = Field(
        None, description=f"Why, in the subject's words (at most {COMMENT_MAX} characters, no U+0000).")


class Feedback(ReadModel):
    """A subject's rating of one assistant message; payload of the `message.feedback` event and
    webhook (`rating: null` when the subject withdrew it)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "message_id": "7c1d2e3f-1111-4a2b-9c3d-4e5f6a7b8c9d", "thread_id": "0f8b7a52-2d7e-4c1e-8a5e-1f3b9c6d2a40",
        "run_id": "4b0d6c1e-6a53-4a53-9d0c-2f5a8f0e7c11", "agent": "agent_3k9x2m", "agent_version": 2,
        "subject": "web:alice", "rating": "down", "comment": "It named the wrong bank.",
        "created_at": "2026-01-01T12:00:05Z", "updated_at": "2026-01-01T12:00:05Z"}]})
    message_id: UUIDStr
    thread_id: UUIDStr
    run_id: UUIDStr | None
    agent: str = Field(description="The agent's public id, `agent_…`.")
    agent_version: int = Field(description="The version of the agent that wrote the message.")
    subject: str
    rating: Rating | None = Field(description="`up` or `down`; null in the event of a withdrawn rating.")
    comment: str | None
    created_at: NullableTimestamp
    updated_at: NullableTimestamp


class MessageRating(ReadModel):
    """The subject's own rating of a message, as the message list shows it."""

    rating: Rating
    comment: str | None
    updated_at: NullableTimestamp
