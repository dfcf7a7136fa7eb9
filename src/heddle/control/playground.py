"""The console's playground: an operator talks to an agent (a saved version, or the editor's
unsaved draft) as a test subject they name, `playground:<name>`.

Its runs are ordinary runs of origin `playground` (runs.origin): executed, traced and charged
like any other, filterable on the runs page, and left out of the overview's figures of users'
runs (heddle/control/overview.py). A draft is stored as a version numbered below 1
(heddle/loom/agents.py `save_draft`), so its run executes exactly what was in the editor and
its trace says so, while the agent's current version stays as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from heddle.auth.context import AuthContext
from heddle.auth.relay import workspace_info
from heddle.auth.subjects import canonical_subject
from heddle.control.agents import _checked, agent
from heddle.control.errors import not_found
from heddle.control.workspaces import workspace
from heddle.loom import agents as agent_service
from heddle.loom import approvals, service
from heddle.loom.agent_file import AgentFile
from heddle.loom.models import Run
from heddle.loom.unit_of_work import RunWork
from heddle.runs_vocabulary import ORIGIN_PLAYGROUND

PREFIX = "playground:"


def subject_of(name: str) -> str:
    """`playground:<name>`; 400 invalid_subject for a name that makes no canonical subject."""
    return canonical_subject(PREFIX + name.strip(), source="subject")


def _as(ws, subject: str) -> AuthContext:
    # Relay mode without a key: the operator acts for the named test subject.
    return AuthContext(mode="relay", workspace=workspace_info(ws), key_id=None, key_mode="test", subject=subject)


async def post_message(work: RunWork, workspace_id: str, agent_id: str, *, subject: str, content: str,
                       draft: AgentFile | None, version: int | None, model_classes: Iterable[str],
                       created_by: str | None) -> dict[str, Any]:
    """Post the operator's message in the test subject's thread: a new run of the chosen
    version (or the draft), or the answer to the run awaiting input."""
    session = work.session
    ws = await workspace(session, workspace_id)
    found = await agent(session, workspace_id, agent_id)
    if draft is not None:
        runs_version = (await _checked(agent_service.save_draft(session, found, draft, model_classes,
                                                                created_by=created_by))).version
    elif version is not None:
        if await agent_service.get_version(session, found.id, version) is None:
            raise not_found(f"version of agent {found.id}:", version)
        runs_version = version
    else:
        runs_version = found.version
    auth = _as(ws, subject_of(subject))
    thread, _created = await service.open_thread(session, auth, found.id)
    accepted = await service.post_message(work, auth, thread["id"], content, origin=ORIGIN_PLAYGROUND,
                                          agent_version=runs_version)
    return {**accepted, "thread_id": thread["id"], "subject": auth.subject, "version": runs_version}


async def playground_run(session, workspace_id: str, run_id: str) -> Run:
    try:
        run = await session.get(Run, uuid.UUID(run_id))
    except ValueError:
        run = None
    if run is None or run.workspace_id != workspace_id or run.origin != ORIGIN_PLAYGROUND:
        raise not_found("playground run", run_id)
    return run


async def answer_approval(work: RunWork, workspace_id: str, run_id: str, tool_call_id: str, approved: bool,
                          reason: str | None) -> dict[str, Any]:
    """Approve or decline a tool call a playground run waits on, as its test subject."""
    ws = await workspace(work.session, workspace_id)
    run = await playground_run(work.session, workspace_id, run_id)
    return await approvals.answer(work, _as(ws, run.subject), run_id, tool_call_id, approved, reason)
