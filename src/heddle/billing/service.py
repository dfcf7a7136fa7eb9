"""Grants and charges against a workspace balance, safe under concurrency.

A charge is one conditional UPDATE (`balance >= amount`) plus a ledger row (one statement on
PostgreSQL, two on SQLite), inside the caller's transaction: PostgreSQL's row lock and SQLite's
single writer make concurrent charges serialise, so the balance never goes below zero and always
equals the ledger sum.
"""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, func, insert, literal_column, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.billing.models import LedgerEntry
from heddle.db import dialect
from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.money import to_credits
from heddle.workspaces.models import Workspace


class InsufficientCredits(HeddleError):
    def __init__(self, balance_micro: int, amount_micro: int):
        super().__init__(
            "insufficient_credits",
            f"The workspace balance ({to_credits(balance_micro)} credits) cannot pay "
            f"{to_credits(amount_micro)} credits.",
            details={"balance_credits": to_credits(balance_micro),
                     "required_credits": to_credits(amount_micro)},
        )


async def balance_micro(session: AsyncSession, workspace_id: str) -> int:
    value = await session.scalar(select(Workspace.balance_micro).where(Workspace.id == workspace_id))
    if value is None:
        raise LookupError(workspace_id)
    return value


async def grant(session: AsyncSession, workspace_id: str, amount_micro: int, *,
                reason: str = "grant", ref: str | None = None) -> LedgerEntry:
    if amount_micro <= 0:
        raise ValueError("a grant must be positive")
    new_balance = await session.scalar(
        update(Workspace).where(Workspace.id == workspace_id)
        .values(balance_micro=Workspace.balance_micro + amount_micro)
        .returning(Workspace.balance_micro)
    )
    if new_balance is None:
        raise LookupError(workspace_id)
    entry = LedgerEntry(workspace_id=workspace_id, amount_micro=amount_micro,
                        balance_after_micro=new_balance, kind="grant", reason=reason, ref=ref)
    session.add(entry)
    await session.flush()
    return entry


_workspaces = Workspace.__table__
# Core statements, built once: charges run on every identified lookup and every model turn, and
# the ORM unit of work would add more than the statements themselves cost.
_TAKE = (
    update(_workspaces)
    .where(_workspaces.c.id == bindparam("workspace_id"), _workspaces.c.balance_micro >= bindparam("amount"))
    # `updated_at` set here, not by the column's default: a default's parameter would not reach
    # the UPDATE inside the WITH below.
    .values(balance_micro=_workspaces.c.balance_micro - bindparam("amount"),
            updated_at=bindparam("at", type_=_workspaces.c.updated_at.type))
    .returning(_workspaces.c.balance_micro)
)
_ledger = LedgerEntry.__table__
_RECORD = insert(_ledger)
# PostgreSQL: the UPDATE and the ledger row in one statement (one round trip fewer on every model
# turn and identified lookup). The INSERT selects from the UPDATE's RETURNING, so a balance that
# cannot pay updates nothing and records nothing.
_taken = _TAKE.cte("taken")
_TAKE_AND_RECORD = (
    insert(_ledger).from_select(
        ["workspace_id", "amount_micro", "balance_after_micro", "kind", "reason", "ref", "run_id", "key_id",
         "created_at"],
        select(bindparam("workspace_id", type_=_ledger.c.workspace_id.type),
               -bindparam("amount", type_=_ledger.c.amount_micro.type), _taken.c.balance_micro,
               literal_column("'charge'", _ledger.c.kind.type), bindparam("reason", type_=_ledger.c.reason.type),
               bindparam("ref", type_=_ledger.c.ref.type), bindparam("run_id", type_=_ledger.c.run_id.type),
               bindparam("key_id", type_=_ledger.c.key_id.type),
               bindparam("at", type_=_ledger.c.created_at.type)))
    .add_cte(_taken).returning(_ledger.c.balance_after_micro)
)


async def charge(session: AsyncSession, workspace_id: str, amount_micro: int, *, reason: str,
                 ref: str | None = None, run_id: uuid.UUID | None = None,
                 key_id: str | None = None) -> int | None:
    """Take `amount_micro` from the balance or raise InsufficientCredits; 0 charges nothing.

    Returns the balance after the charge (None when nothing was charged). The UPDATE bypasses
    the ORM, so a `Workspace` already loaded in `session` keeps its old balance.
    """
    if amount_micro < 0:
        raise ValueError("a charge must not be negative")
    if amount_micro == 0:
        return None
    row = {"workspace_id": workspace_id, "amount": amount_micro, "reason": reason, "ref": ref, "run_id": run_id,
           "key_id": key_id, "at": utcnow()}
    if dialect.writes_in_cte(session):
        new_balance = (await session.execute(_TAKE_AND_RECORD, row)).scalar()
    else:  # SQLite has no UPDATE inside a WITH: the same two statements, one after the other
        new_balance = (await session.execute(_TAKE, row)).scalar()
        if new_balance is not None:
            await session.execute(_RECORD, {
                "workspace_id": workspace_id, "amount_micro": -amount_micro, "balance_after_micro": new_balance,
                "kind": "charge", "reason": reason, "ref": ref, "run_id": run_id, "key_id": key_id,
                "created_at": row["at"]})
    if new_balance is None:
        raise InsufficientCredits(await balance_micro(session, workspace_id), amount_micro)
    return new_balance


async def ledger_sum(session: AsyncSession, workspace_id: str) -> int:
    total = await session.scalar(
        select(func.coalesce(func.sum(LedgerEntry.amount_micro), 0))
        .where(LedgerEntry.workspace_id == workspace_id)
    )
    return int(total or 0)


async def recent_entries(session: AsyncSession, workspace_id: str, limit: int = 20) -> list[LedgerEntry]:
    rows = await session.scalars(
        select(LedgerEntry).where(LedgerEntry.workspace_id == workspace_id)
        .order_by(LedgerEntry.id.desc()).limit(limit)
    )
    return list(rows)


def entry_dict(e: LedgerEntry) -> dict:
    return {
        "id": e.id, "kind": e.kind, "reason": e.reason,
        "amount_credits": to_credits(e.amount_micro),
        "balance_after_credits": to_credits(e.balance_after_micro),
        "ref": e.ref, "run_id": str(e.run_id) if e.run_id else None,
        "created_at": e.created_at.isoformat().replace("+00:00", "Z"),
    }
