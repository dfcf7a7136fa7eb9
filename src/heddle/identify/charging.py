"""Identify as a paid call: check the balance, look up, charge exactly once if identified.

Shared by `POST /v1/identify` and the Loom built-in `identify` tool, so both bill the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import HTTPConnection

from heddle import process_services
from heddle.billing import service as billing
from heddle.billing.service import InsufficientCredits
from heddle.db.base import Database
from heddle.identify.schemas import IdentifyRequest
from heddle.observability.metrics import Metrics

if TYPE_CHECKING:
    from heddle.identify.service import IdentifyService

Recorder = Callable[[AsyncSession, dict[str, Any]], Awaitable[None]]
# Takes `amount` micro-credits for the lookup (ref: its rail) inside the given transaction.
Charger = Callable[[AsyncSession, int, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class IdentifyCharging:
    """What a paid lookup needs: the database, the lookup service, metrics and the price."""

    db: Database
    identify: IdentifyService
    metrics: Metrics
    price_micro: int


async def identify_and_charge(svc: IdentifyCharging, *, workspace_id: str, key_id: str | None,
                              request: IdentifyRequest,
                              balance_hint: int | None = None,
                              charge: Charger | None = None,
                              record: Recorder | None = None) -> tuple[dict[str, Any], int]:
    """Return the Identify Result and the micro-credits charged (0 unless `identified`).

    `charge(session, amount, ref)`, when given, takes the price instead of a plain workspace
    charge (a run's `identify` tool: the run's fenced charge, heddle/loom/tools/identify.py);
    it may raise to prevent the charge. `record(session, result)` runs first in the same
    transaction (in a transaction of its own when nothing is charged): the Idempotency-Key's
    response commits with the charge or not at all, so a retry is never billed twice and a
    charged call always has its response stored.
    """
    price = svc.price_micro
    if price:
        if balance_hint is None:
            async with svc.db.session() as session:
                balance_hint = await billing.balance_micro(session, workspace_id)
        if balance_hint < price:  # 402 before the lookup, per the contract
            raise InsufficientCredits(balance_hint, price)
    result = await svc.identify.identify(request)
    svc.metrics.identify.labels(str(result.rail), str(result.result)).inc()
    data = result.to_dict()
    charged = 0
    if result.billable and price:
        async with svc.db.transaction() as session:
            if record is not None:
                await record(session, data)
            if charge is not None:
                await charge(session, price, str(result.rail))
            else:
                await billing.charge(session, workspace_id, price, reason="identify", ref=str(result.rail),
                                     key_id=key_id)
        svc.metrics.credits_charged.labels("identify").inc(price)
        charged = price
    elif record is not None:
        async with svc.db.transaction() as session:
            await record(session, data)
    return data, charged


def identify_charging(conn: HTTPConnection) -> IdentifyCharging:
    """The process's Identify with its price, for a route (heddle/process_services.py)."""
    return process_services.of(conn).identify_charging
