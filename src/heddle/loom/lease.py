"""Holding a run while executing it: a lease to find abandoned runs, a fence to stop stale executors.

A lease (owner + expiry, renewed while the run executes) tells other processes the run is taken;
when it expires, another executor may claim the run. Expiry alone cannot stop the old one, though:
a process paused (SIGSTOP, a long GC, a network partition) past its lease wakes up believing it
still holds the run. So every claim also grows the run's fencing token (`runs.fence`), and every
write an executor makes is conditional on the token it claimed (`Fence.hold`). An executor whose
token moved on gets `StaleExecutor` at its next write, before calling any tool host, and stops
without writing anything.

`claim_and_execute` is the one way to run a run's engine: the in-process executor and a queue
worker both use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.db.base import Database, utcnow
from heddle.loom.models import Run
from heddle.loom.states import RUNNING, StaleExecutor
from heddle.observability.logging import get_logger

log = get_logger(__name__)

__all__ = ["DEFAULT_LEASE", "Fence", "StaleExecutor", "claim", "claim_and_execute", "claimed_values", "release",
           "renew"]

DEFAULT_LEASE = dt.timedelta(seconds=30)

_runs = Run.__table__


def executor_name() -> str:
    """A lease owner name unique to this process (host, pid and a random part)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# Built once: the guard runs in every write transaction of every run step.
_HELD = update(_runs).where(_runs.c.id == bindparam("rid"), _runs.c.fence == bindparam("token"),
                            _runs.c.state == RUNNING)
_HOLD = _HELD.values(lease_expires_at=bindparam("expires"), updated_at=_runs.c.updated_at)
_CURRENT = select(_runs.c.fence, _runs.c.state).where(_runs.c.id == bindparam("rid"))


_PLAIN = (str, int, float, dt.datetime, type(None))


@functools.cache
def _hold_setting(columns: tuple[str, ...], returning=None):
    """The fenced UPDATE that also sets `columns` (from parameters `v_<column>`) and, with
    `returning` (an expression built once), returns it."""
    statement = _HELD.values({"lease_expires_at": bindparam("expires"),
                              **{c: bindparam(f"v_{c}", type_=_runs.c[c].type) for c in columns}})
    return statement if returning is None else statement.returning(returning)


@dataclass(frozen=True)
class Fence:
    """The token an executor claimed a run with; the condition of each of its writes."""

    run_id: uuid.UUID
    token: int
    lease: dt.timedelta = DEFAULT_LEASE

    def stale(self, why: str = "fence moved on") -> StaleExecutor:
        return StaleExecutor(self.run_id, self.token, why)

    async def hold(self, session: AsyncSession, returning=None, **values):
        """Inside a write transaction: go on holding the run (renewing the lease) or raise StaleExecutor.

        `values` are further changes of the run made by the same statement (a turn's counters,
        a transition's columns), so guarding a step's writes costs no extra round trip.

        On PostgreSQL the UPDATE locks the run's row until the transaction ends, so a takeover
        (which updates the same row) waits for this transaction, or this one sees the new token
        and stops; on SQLite the transaction holds the database's one write lock. Either way the
        writes that follow in the same transaction happen only while this executor holds the run.

        `returning`: an SQL expression (built once) that the UPDATE also returns, the value of
        this call (a question the step would otherwise ask in a statement of its own).
        """
        params = {"rid": self.run_id, "token": self.token, "expires": utcnow() + self.lease}
        if not values and returning is None:
            statement = _HOLD
        elif all(isinstance(v, _PLAIN) for v in values.values()):
            statement = _hold_setting(tuple(values), returning)  # built once per set of columns
            params.update({f"v_{key}": value for key, value in values.items()})
        else:  # an SQL expression among the values
            statement = _HELD.values({"lease_expires_at": bindparam("expires"), **values})
            statement = statement if returning is None else statement.returning(returning)
        result = await session.execute(statement, params)
        if returning is not None:
            row = result.first()
            if row is None:
                raise self.stale()
            return row[0]
        if result.rowcount != 1:
            raise self.stale()
        return None

    async def check(self, db: Database) -> None:
        """Outside a transaction (before an outbound call): raise StaleExecutor if the run was lost."""
        async with db.session() as session:
            row = (await session.execute(_CURRENT, {"rid": self.run_id})).first()
        if row is None or row.fence != self.token or row.state != RUNNING:
            raise self.stale()


async def claim(db: Database, run_id: uuid.UUID, owner: str, lease: dt.timedelta = DEFAULT_LEASE,
                *, force: bool = False, own: bool = False) -> Fence | None:
    """Take a `running` run whose lease is free or expired (any lease when `force`; also one
    `owner` holds itself when `own`: a run inserted claimed by its executor, `claimed_values`,
    that waited for a slot); None if not."""
    now = utcnow()
    statement = update(_runs).where(_runs.c.id == run_id, _runs.c.state == RUNNING)
    if not force:
        free = [_runs.c.lease_owner.is_(None), _runs.c.lease_expires_at < now]
        statement = statement.where(or_(*free, _runs.c.lease_owner == owner) if own else or_(*free))
    # Lease bookkeeping is not a change a caller can see: `updated_at` stays as it is.
    statement = statement.values(fence=_runs.c.fence + 1, lease_owner=owner, lease_expires_at=now + lease,
                                 updated_at=_runs.c.updated_at).returning(_runs.c.fence)
    async with db.single_statement() as session:
        token = (await session.execute(statement)).scalar()
    return None if token is None else Fence(run_id, token, lease)


async def renew(db: Database, fence: Fence) -> bool:
    """Extend the lease; False when the run was lost (then stop renewing)."""
    async with db.single_statement() as session:
        result = await session.execute(_HOLD, {"rid": fence.run_id, "token": fence.token,
                                               "expires": utcnow() + fence.lease})
    return result.rowcount == 1


async def release(db: Database, fence: Fence) -> None:
    """Give the lease back (a no-op when another executor holds the run by now)."""
    async with db.single_statement() as session:
        await session.execute(
            update(_runs).where(_runs.c.id == fence.run_id, _runs.c.fence == fence.token)
            .values(lease_owner=None, lease_expires_at=None, updated_at=_runs.c.updated_at))


class Executable(Protocol):
    async def execute(self, run_id: uuid.UUID, fence: Fence) -> bool | None:
        """True when the run left `running` under this fence (its lease is gone with it) or the
        fence was lost: then there is nothing to release."""


def claimed_values(owner: str, lease: dt.timedelta = DEFAULT_LEASE) -> dict:
    """The columns of a run inserted already claimed by `owner` (its first fence, token 1): the
    in-process executor takes a new run in the very transaction that creates it, which saves
    the claim's own transaction (see InProcessExecutor.preclaim)."""
    return {"fence": 1, "lease_owner": owner, "lease_expires_at": utcnow() + lease}


async def claim_and_execute(db: Database, engine: Executable, run_id: uuid.UUID, owner: str,
                            lease: dt.timedelta = DEFAULT_LEASE, *, force: bool = False,
                            fence: Fence | None = None, own: bool = False) -> bool:
    """Claim the run, execute it while renewing the lease, release it; False if it was not claimable.

    Used by every executor (in-process tasks, queue workers), so all hold runs the same way.
    `fence`: the run was claimed already (inserted with `claimed_values`); `own`: it was, but
    waited, so claim it afresh even though `owner` holds it.
    """
    if fence is None:
        fence = await claim(db, run_id, owner, lease, force=force, own=own)
        if fence is None:
            return False
    # Most runs end long before their first renewal is due: a timer, not a task per run, until then.
    loop = asyncio.get_running_loop()
    renewer: list[asyncio.Task] = []
    timer = loop.call_later(fence.lease.total_seconds() / 3, lambda: renewer.append(
        loop.create_task(_keep_renewed(db, fence), name=f"lease-{run_id}")))
    done = False
    try:
        done = bool(await engine.execute(run_id, fence))
    finally:
        timer.cancel()
        for task in renewer:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if not done:
            try:
                await release(db, fence)
            except Exception:  # the lease then simply expires
                log.exception("lease_release_failed", run_id=str(run_id))
    return True


async def _keep_renewed(db: Database, fence: Fence) -> None:
    """Renew now (a third of the lease has passed), then every third of the lease."""
    while True:
        try:
            if not await renew(db, fence):
                log.warning("run_lease_lost", run_id=str(fence.run_id), fence=fence.token)
                return  # the engine finds out at its next write and stops
        except Exception:
            log.exception("lease_renew_failed", run_id=str(fence.run_id))
        await asyncio.sleep(fence.lease.total_seconds() / 3)
