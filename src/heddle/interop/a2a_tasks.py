"""A Heddle run as an A2A task, and a Heddle agent as an A2A agent card (a2a-sdk's own types).

| Heddle run                          | A2A task                                                  |
|-------------------------------------|-----------------------------------------------------------|
| id                                  | `id`                                                      |
| thread_id                           | `contextId`                                               |
| queued                              | TASK_STATE_SUBMITTED                                      |
| running                             | TASK_STATE_WORKING                                        |
| awaiting_input (ask_user)           | TASK_STATE_INPUT_REQUIRED, the question as status message |
| awaiting_input (approvals)          | TASK_STATE_INPUT_REQUIRED, the calls awaiting approval    |
| awaiting_outcome                    | TASK_STATE_INPUT_REQUIRED, the calls awaiting an outcome  |
| closed                              | TASK_STATE_COMPLETED, the reply as artifact `reply`       |
| failed, error `cancelled`/`interrupted` | TASK_STATE_CANCELED                                   |
| failed                              | TASK_STATE_FAILED, the run's error as status message      |
| the run's messages                  | `history` (user: ROLE_USER, assistant: ROLE_AGENT)        |
"""

from __future__ import annotations

from typing import Any

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    Artifact,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from google.protobuf.struct_pb2 import Struct

from heddle.runs_vocabulary import AWAITING_INPUT, AWAITING_OUTCOME, CLOSED, FAILED, QUEUED, RUNNING

STATES: dict[str, int] = {
    QUEUED: TaskState.TASK_STATE_SUBMITTED, RUNNING: TaskState.TASK_STATE_WORKING,
    AWAITING_INPUT: TaskState.TASK_STATE_INPUT_REQUIRED, AWAITING_OUTCOME: TaskState.TASK_STATE_INPUT_REQUIRED,
    CLOSED: TaskState.TASK_STATE_COMPLETED, FAILED: TaskState.TASK_STATE_FAILED,
}
CANCELLED_CODES = ("cancelled", "interrupted")
# The Heddle states of each A2A state, for tasks/list's status filter.
HEDDLE_STATES: dict[int, tuple[str, ...]] = {
    TaskState.TASK_STATE_SUBMITTED: (QUEUED,), TaskState.TASK_STATE_WORKING: (RUNNING,),
    TaskState.TASK_STATE_INPUT_REQUIRED: (AWAITING_INPUT, AWAITING_OUTCOME),
    TaskState.TASK_STATE_COMPLETED: (CLOSED,), TaskState.TASK_STATE_FAILED: (FAILED,),
    TaskState.TASK_STATE_CANCELED: (FAILED,),
}
PROTOCOL_VERSION = "1.0"
BEARER = "heddle_workspace_key"


def task_state(run: dict[str, Any]) -> int:
    if run["state"] == FAILED and (run.get("error") or {}).get("code") in CANCELLED_CODES:
        return TaskState.TASK_STATE_CANCELED
    return STATES[run["state"]]


def _struct(data: dict[str, Any]) -> Struct:
    value = Struct()
    value.update(data)
    return value


def agent_message(text: str, *, task_id: str, context_id: str, message_id: str,
                  data: dict[str, Any] | None = None) -> Message:
    parts = [Part(text=text)]
    if data is not None:
        part = Part()
        part.data.struct_value.update(data)
        parts.append(part)
    return Message(message_id=message_id, role=Role.ROLE_AGENT, parts=parts, task_id=task_id, context_id=context_id)


def _status_message(run: dict[str, Any]) -> Message | None:
    task_id, context_id = run["id"], run["thread_id"]
    pending = run.get("pending") or {}
    if pending.get("type") == "input":
        return agent_message(pending.get("question") or "", task_id=task_id, context_id=context_id,
                             message_id=f"{task_id}:input")
    if pending.get("type") in ("approval", "outcome"):
        calls = [{"tool_call_id": c["id"], "name": c["name"], "args": c.get("args") or {}}
                 for c in pending.get("tool_calls") or []]
        what = "approval" if pending["type"] == "approval" else "outcome"
        text = f"Waiting for the {what} of: " + ", ".join(c["name"] for c in calls)
        return agent_message(text, task_id=task_id, context_id=context_id, message_id=f"{task_id}:{what}",
                             data={"pending": what, "tool_calls": calls})
    if run["state"] == FAILED and run.get("error"):
        return agent_message(run["error"]["message"], task_id=task_id, context_id=context_id,
                             message_id=f"{task_id}:error", data={"code": run["error"]["code"]})
    latest = run.get("latest_message")
    if run["state"] == CLOSED and latest:
        return agent_message(latest["content"], task_id=task_id, context_id=context_id, message_id=latest["id"])
    return None


def task_of(run: dict[str, Any], messages: list[dict[str, Any]] | None = None, *,
            history_length: int | None = None) -> Task:
    """The task of a run as loom/views.py renders it (`run`), with its messages as history."""
    status = TaskStatus(state=task_state(run))
    status.timestamp.FromJsonString(run["updated_at"])
    if (message := _status_message(run)) is not None:
        status.message.CopyFrom(message)
    task = Task(id=run["id"], context_id=run["thread_id"], status=status,
                metadata=_struct({"heddle_state": run["state"], "origin": run.get("origin", "api"),
                                  "cost_credits": run.get("cost_credits", 0)}))
    latest = run.get("latest_message")
    if run["state"] == CLOSED and latest:
        task.artifacts.append(Artifact(artifact_id=latest["id"], name="reply", parts=[Part(text=latest["content"])]))
    history = messages or []
    if history_length is not None and history_length >= 0:
        history = history[-history_length:] if history_length else []
    for m in history:
        task.history.append(Message(message_id=m["id"], context_id=run["thread_id"], task_id=run["id"],
                                    role=Role.ROLE_USER if m["role"] == "user" else Role.ROLE_AGENT,
                                    parts=[Part(text=m["content"])]))
    return task


def as_submitted(task: Task) -> Task:
    """`task` as it stood when its first message was taken: submitted, no reply yet (its history
    kept). A new task's stream starts with it whatever the run has done since, and its log,
    read from the start, tells the rest: the same events in the same order however fast the
    run was (loom may finish a short run before the stream's first read)."""
    sent = Task()
    sent.CopyFrom(task)
    sent.status.state = TaskState.TASK_STATE_SUBMITTED
    sent.status.ClearField("message")
    del sent.artifacts[:]
    sent.metadata.update({"heddle_state": QUEUED})
    return sent


def agent_card(agent: Any, base_url: str) -> AgentCard:
    """The card of a published agent: JSON-RPC at `/v1/a2a/{id}`, the workspace key as a bearer, and
    the Service-Subject header that names whom the caller acts for."""
    settings = agent.a2a or {}
    url = f"{base_url.rstrip('/')}/v1/a2a/{agent.id}"
    description = settings.get("description") or (agent.instructions or agent.name)[:2000]
    skills = [AgentSkill(id="conversation", name=agent.name, description=description, tags=["heddle", "loom"],
                         input_modes=["text/plain"], output_modes=["text/plain"])]
    for tool in agent.tools or []:
        if tool.get("builtin") == "identify":
            skills.append(AgentSkill(
                id="identify", name="Identify", tags=["payments", "identify"],
                description="Finds the institution behind an account identifier (BIC, IBAN, routing number, ...).",
                examples=["Where does DEUTDEFF go?"]))
    scheme = SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
        scheme="bearer", bearer_format="Heddle workspace key (sk_live_…) or session token",
        description=("The workspace's API key as a bearer. With a workspace key, send `Service-Subject: "
                     "<channel>:<channel_user_id>` too: the user the caller acts for (Heddle's relay mode); "
                     "tasks and contexts are that subject's. A direct session token carries its subject.")))
    card = AgentCard(
        name=agent.name, description=description, version=str(agent.version),
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION)],
        provider=AgentProvider(organization="Heddle", url=base_url.rstrip("/")),
        documentation_url=f"{base_url.rstrip('/')}/docs",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"], skills=skills)
    card.security_schemes[BEARER].CopyFrom(scheme)
    card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card
