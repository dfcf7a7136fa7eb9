"""Credits: grants, the ledger page by page, and a balance series for a chart."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.billing import service as billing
from heddle.billing.models import LedgerEntry
from heddle.control.errors import invalid
from heddle.control.workspaces import workspace
from heddle.money import to_credits, to_micro
from heddle.timeutil import iso

SERIES_POINTS = 500  # the chart shows the balance after each of the latest 500 ledger entries
MAX_GRANT = 1_000_000_000


async def view(session: AsyncSession, workspace_id: str, *, limit: int = 20,
               before: int | None = None) -> dict[str, Any]:
    """The balance, a ledger page (newest first; `before` = an entry id) and the balance series."""
    ws = await workspace(session, workspace_id)
    query = select(LedgerEntry).where(LedgerEntry.workspace_id == ws.id)
    if before is not None:
        query = query.where(LedgerEntry.id < before)
    rows = list(await session.scalars(query.order_by(LedgerEntry.id.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    recent = list(await session.execute(
        select(LedgerEntry.created_at, LedgerEntry.balance_after_micro).where(LedgerEntry.workspace_id == ws.id)
        .order_by(LedgerEntry.id.desc()).limit(SERIES_POINTS)))
    await session.refresh(ws)  # a charge's Core UPDATE bypasses the identity map
    return {
        "workspace_id": ws.id, "balance_credits": to_credits(ws.balance_micro),
        "ledger": [billing.entry_dict(e) for e in rows],
        "next_before": rows[-1].id if more and rows else None,
        "series": [{"at": iso(at), "balance_credits": to_credits(balance)} for at, balance in reversed(recent)],
    }


async def grant(session: AsyncSession, workspace_id: str, amount: float) -> dict[str, Any]:
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not 0 < amount <= MAX_GRANT:
        raise invalid("amount", f"amount: must be a positive number of credits, at most {MAX_GRANT}")
    micro = to_micro(amount)
    if micro <= 0:
        raise invalid("amount", "amount: too small (credits have 6 decimals)")
    ws = await workspace(session, workspace_id)
    await billing.grant(session, ws.id, micro)
    return await view(session, ws.id)
