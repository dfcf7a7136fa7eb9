"""The request bodies of the protocol routes, as the OpenAPI document describes them.

Documentation only: each route validates its body with the protocol's own model (ag-ui-protocol's
`RunAgentInput`, a2a-sdk's JSON-RPC dispatcher), which stay the one definition of the shapes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class AgUiRunAgentInput(BaseModel):
    """AG-UI's RunAgentInput (docs/interop.md): the conversation so far, the caller's front-end
    tools, and `resume` entries answering the previous request's interrupts."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "threadId": "t-1", "runId": "r-1",
        "messages": [{"id": "m-1", "role": "user", "content": "Where does DEUTDEFF go?"}]}]})
    threadId: str = Field(description="The Heddle thread's id, or an id of the caller's own (then the subject's "
                                      "thread with the agent).")
    runId: str = Field(description="Echoed in RUN_STARTED and RUN_FINISHED.")
    messages: list[dict[str, Any]] = Field(description="AG-UI messages; those after the agent's last one are acted on.")
    tools: list[dict[str, Any]] | None = Field(None, description="Front-end tools: the run waits on their calls.")
    context: list[dict[str, Any]] | None = None
    state: Any = None
    forwardedProps: Any = None
    resume: list[dict[str, Any]] | None = Field(None, description="Answers to the previous request's interrupts.")


class A2AJsonRpcRequest(BaseModel):
    """An A2A JSON-RPC 2.0 request: v1.0 methods (SendMessage, SendStreamingMessage, GetTask, ListTasks,
    CancelTask, SubscribeToTask; send `A2A-Version: 1.0`) or v0.3's (message/send, message/stream,
    tasks/get, tasks/cancel, tasks/resubscribe)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "messageId": "m-1", "role": "user",
            "parts": [{"kind": "text", "text": "Where does DEUTDEFF go?"}]}}}]})
    jsonrpc: str = Field(description="`2.0`.")
    id: int | str | None = None
    method: str
    params: dict[str, Any] | None = None
