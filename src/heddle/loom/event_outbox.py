"""The outbox of run events: stored in the very transaction of the change they describe.

`run.updated` and `message.created` are written when a unit of work ends
(heddle/loom/unit_of_work.py), in its transaction, so an event is stored exactly when its change
commits; with them, the webhook deliveries the change owes (a run that entered closed, failed or
a waiting state: heddle/webhooks/run_rule.py) are enqueued in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping

from sqlalchemy import bindparam, select

from heddle.loom import event_log
from heddle.loom.models import RunEventRow
from heddle.loom.run_event import RunEvent
from heddle.runs_vocabulary import MESSAGE_FEEDBACK, RUN_UPDATED
from heddle.webhooks import outbox as webhooks
from heddle.webhooks import run_rule

_e = RunEventRow.__table__.c
_LAST_UPDATE = (select(_e.data).where(_e.run_id == bindparam("rid"), _e.event == RUN_UPDATED)
                .order_by(_e.seq.desc()).limit(1))


def by_run(events: Iterable[RunEvent]) -> dict[uuid.UUID, list[RunEvent]]:
    """The run events among `events`, by run, in order (a thread's own events are not a run's)."""
    runs: dict[uuid.UUID, list[RunEvent]] = {}
    for event in events:
        if event.run_id is not None:
            runs.setdefault(event.run_id, []).append(event)
    return runs


async def stage(session, events: Iterable[RunEvent], *, held: Mapping[uuid.UUID, str],
                created: Mapping[uuid.UUID, str], endpoints: Mapping[str, bool],
                numbered: Callable[[uuid.UUID], bool] | None = None,
                stored: dict[uuid.UUID, list[RunEvent]] | None = None) -> bool:
    """Store the run events recorded in a transaction, and the webhook deliveries they cause;
    True if it owes any (the dispatcher is then woken after the commit).

    `held`: runs whose row the transaction locked already (a fenced UPDATE or a move), by
    workspace: their lock is not taken again. `created`: runs it inserted (their log is empty).
    `endpoints`: workspaces whose webhook endpoint it already asked about (a closing hold).
    `stored` gets the events of the runs `numbered` picks (and of the runs created), each with
    its seq, for this process's streams to send without reading them back: one read of the
    run's last seq in this transaction, only for a run some stream follows."""
    owed = False
    known = {**held, **created}
    for run_id, run_events in by_run(events).items():
        workspace_id = known.get(run_id) or await event_log.lock_run(session, run_id)
        if workspace_id is None:
            continue
        if await _enqueue_webhooks(session, workspace_id, run_id, run_events, endpoints.get(workspace_id)):
            owed = True
        new = run_id in created
        want = stored is not None and (new or (numbered is not None and numbered(run_id)))
        last = await event_log.insert(session, run_id, run_events, new=new, need_last=want)
        if want:
            first = last - len(run_events) + 1
            stored[run_id] = [event.at(first + i) for i, event in enumerate(run_events)]
    return owed


async def _enqueue_webhooks(session, workspace_id: str, run_id: uuid.UUID, events: list[RunEvent],
                            has_endpoint: bool | None = None) -> bool:
    """The deliveries the webhook rule owes for these events, given the run's last stored
    update; True if any. `has_endpoint`: already known in this transaction, else asked."""
    updates = [event.payload for event in events if event.name == RUN_UPDATED]
    # A rating of one of the run's answers is a webhook of its own (issue 46), whatever the state.
    feedback = [(MESSAGE_FEEDBACK, event.payload) for event in events if event.name == MESSAGE_FEEDBACK]
    if not run_rule.may_owe(updates) and not feedback:
        return False
    if has_endpoint is None:
        has_endpoint = await webhooks.has_endpoint(session, workspace_id)
    if not has_endpoint:
        return False
    deliveries = list(feedback)
    if run_rule.may_owe(updates):
        previous = await session.scalar(_LAST_UPDATE, {"rid": run_id})
        deliveries += run_rule.owed((previous or {}).get("state"), updates)
    for event_type, data in deliveries:
        webhooks.enqueue(session, workspace_id, event_type, data)
    return bool(deliveries)
