"""A workspace at a glance (the console's first page of a workspace): its runs, failures and their
codes, spend, run time (p50/p95) and tokens by model class over the last day or week, all from
what is already stored (runs and turns); no new table, no counter kept on the side.

Run time is a run's `closed_at - opened_at` for the runs of the period that ended. The
percentiles are read from at most DURATIONS_CAP of them (the newest), computed here rather than
in SQL, since SQLite has no percentile function; `durations_sampled` says how many were read.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.control.workspaces import workspace
from heddle.db.base import utcnow
from heddle.loom.models import Run, Turn
from heddle.loom.states import TERMINAL
from heddle.money import to_credits
from heddle.runs_vocabulary import ORIGIN_EVAL, ORIGIN_PLAYGROUND
from heddle.timeutil import iso

PERIODS = {"day": dt.timedelta(days=1), "week": dt.timedelta(days=7)}
DURATIONS_CAP = 20_000

OPERATOR_ORIGINS = (ORIGIN_PLAYGROUND, ORIGIN_EVAL)  # not users' runs


def percentile(sorted_values: list[float], q: float) -> float | None:
    """The q-th percentile (0..1) of ascending values, by linear interpolation; None when empty."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q
    low = int(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


async def overview(session: AsyncSession, workspace_id: str, period: str,
                   now: dt.datetime | None = None) -> dict[str, Any]:
    """The figures of runs created in the last `period` ("day" or "week")."""
    ws = await workspace(session, workspace_id)
    until = now or utcnow()
    since = until - PERIODS[period]
    # Users' runs: the playground's and evals' own runs (runs.origin) are left out of the figures.
    in_period = (Run.workspace_id == ws.id, Run.created_at >= since, Run.created_at < until,
                 Run.origin.notin_(OPERATOR_ORIGINS))

    by_state = dict((await session.execute(
        select(Run.state, func.count()).where(*in_period).group_by(Run.state))).all())
    failures = (await session.execute(
        select(Run.error_code, func.count()).where(*in_period, Run.state == "failed")
        .group_by(Run.error_code).order_by(func.count().desc(), Run.error_code))).all()
    spend_micro = await session.scalar(select(func.coalesce(func.sum(Run.cost_micro), 0)).where(*in_period))
    ended = (await session.execute(
        select(Run.opened_at, Run.closed_at).where(*in_period, Run.state.in_(TERMINAL), Run.closed_at.is_not(None))
        .order_by(Run.created_at.desc()).limit(DURATIONS_CAP))).all()
    durations = sorted(max((closed - opened).total_seconds(), 0.0) for opened, closed in ended if opened)
    tokens = (await session.execute(
        select(Turn.model_class, func.count(), func.coalesce(func.sum(Turn.input_tokens), 0),
               func.coalesce(func.sum(Turn.output_tokens), 0))
        .join(Run, Run.id == Turn.run_id).where(*in_period)
        .group_by(Turn.model_class).order_by(Turn.model_class))).all()

    def ms(q: float) -> int | None:
        value = percentile(durations, q)
        return None if value is None else round(value * 1000)

    return {
        "workspace_id": ws.id, "period": period, "since": iso(since), "until": iso(until),
        "runs": {"total": sum(by_state.values()), "by_state": dict(sorted(by_state.items()))},
        "failures": {"total": by_state.get("failed", 0),
                     "by_code": [{"code": code or "internal_error", "count": n} for code, n in failures]},
        "spend_credits": to_credits(spend_micro or 0),
        "run_time_ms": {"p50": ms(0.5), "p95": ms(0.95), "durations_sampled": len(durations)},
        "tokens_by_model_class": [{"model_class": mc, "turns": n, "input_tokens": int(i), "output_tokens": int(o)}
                                  for mc, n, i, o in tokens],
    }
