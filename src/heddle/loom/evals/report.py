"""An eval's results: each case's checks, the comparison with a baseline version, the summary,
the stored row (heddle/loom/eval_models.py) and the table the CLI prints.

A regression is a case that passed on the baseline version and fails on the version under test.
The eval passes (exit code 0) when no case failed and none regressed.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.loom.eval_models import EvalRun
from heddle.loom.evals.dataset import Case
from heddle.loom.evals.expectations import Outcome, check
from heddle.timeutil import iso


def trace_link(workspace_id: str, run_id: str | None) -> str | None:
    """The console's page of the run's trace (relative to the server's URL)."""
    return f"/console/w/{workspace_id}/runs/{run_id}" if run_id else None


def case_result(workspace_id: str, case: Case, outcome: Outcome) -> dict[str, Any]:
    checks = check(case, outcome)
    last = outcome.run_ids[-1] if outcome.run_ids else None
    return {"name": case.name, "line": case.line, "passed": all(c["passed"] for c in checks), "checks": checks,
            "state": outcome.last_state, "error": outcome.error, "credits": outcome.credits,
            "latency_ms": outcome.latency_ms, "run_ids": outcome.run_ids, "trace": trace_link(workspace_id, last),
            "answer": outcome.answers[-1] if outcome.answers else None}


def compare(current: list[dict[str, Any]], baseline: list[dict[str, Any]] | None) -> list[str]:
    """Attach each case's baseline result; the names of the regressions, in the dataset's order."""
    if baseline is None:
        return []
    regressions = []
    for case, base in zip(current, baseline, strict=True):
        case["baseline"] = {k: base[k] for k in ("passed", "checks", "state", "error", "credits", "latency_ms",
                                                 "run_ids", "trace", "answer")}
        case["regression"] = bool(base["passed"] and not case["passed"])
        if case["regression"]:
            regressions.append(case["name"])
    return regressions


def summary(cases: list[dict[str, Any]], regressions: list[str], *, version: int,
            baseline_version: int | None, wall_seconds: float) -> dict[str, Any]:
    passed = sum(1 for c in cases if c["passed"])
    return {"passed": passed, "failed": len(cases) - passed, "regressions": regressions,
            "version": version, "baseline_version": baseline_version,
            "credits": round(sum(c["credits"] for c in cases), 6),
            "baseline_credits": (round(sum(c["baseline"]["credits"] for c in cases), 6)
                                 if baseline_version is not None else None),
            "wall_seconds": round(wall_seconds, 3)}


def ok(result: dict[str, Any]) -> bool:
    return result["summary"]["failed"] == 0 and not result["summary"]["regressions"]


async def store(session: AsyncSession, workspace_id: str, agent_id: str, dataset: str,
                result: dict[str, Any]) -> str:
    s = result["summary"]
    row = EvalRun(id=uuid.uuid4(), workspace_id=workspace_id, agent_id=agent_id, version=s["version"],
                  baseline_version=s["baseline_version"], dataset=dataset[-300:], passed=s["passed"],
                  failed=s["failed"], regressions=s["regressions"], cases=result["cases"])
    session.add(row)
    await session.flush()
    return str(row.id)


def eval_run_dict(row: EvalRun, *, with_cases: bool = True) -> dict[str, Any]:
    data = {"id": str(row.id), "agent": row.agent_id, "version": row.version,
            "baseline_version": row.baseline_version, "dataset": row.dataset,
            "summary": {"passed": row.passed, "failed": row.failed, "regressions": list(row.regressions or [])},
            "created_at": iso(row.created_at)}
    if with_cases:
        data["cases"] = row.cases
    return data


async def list_runs(session: AsyncSession, workspace_id: str, agent_id: str | None = None,
                    limit: int = 50) -> list[dict[str, Any]]:
    query = select(EvalRun).where(EvalRun.workspace_id == workspace_id)
    if agent_id:
        query = query.where(EvalRun.agent_id == agent_id)
    rows = await session.scalars(query.order_by(EvalRun.created_at.desc()).limit(limit))
    return [eval_run_dict(r, with_cases=False) for r in rows]


def _mark(passed: bool | None) -> str:
    return "-" if passed is None else ("pass" if passed else "FAIL")


def table(result: dict[str, Any]) -> str:
    """The human-readable report: one block per case, then the summary."""
    s = result["summary"]
    lines = []
    for case in result["cases"]:
        base = case.get("baseline")
        head = f"{_mark(case['passed']):4}  {case['name']}"
        if base is not None:
            head += (f"   (v{s['baseline_version']}: {_mark(base['passed'])} -> "
                     f"v{s['version']}: {_mark(case['passed'])})")
            if case.get("regression"):
                head += "  REGRESSION"
        lines.append(head)
        base_checks = {c["expectation"]: c for c in (base or {}).get("checks", [])}
        for c in case["checks"]:
            side = f"  [v{s['baseline_version']}: {_mark(base_checks[c['expectation']]['passed'])}]" \
                if c["expectation"] in base_checks else ""
            lines.append(f"      {_mark(c['passed']):4} {c['expectation']}: {c['detail']}{side}")
        lines.append(f"      state {case['state']}, {case['credits']:g} credits, {case['latency_ms']:g} ms"
                     + (f", trace {case['trace']}" if case["trace"] else "")
                     + (f", error {case['error']}" if case["error"] else ""))
    lines.append("")
    lines.append(f"v{s['version']}: {s['passed']} passed, {s['failed']} failed, {s['credits']:g} credits, "
                 f"{s['wall_seconds']:g} s" + (f"; {len(s['regressions'])} regression(s) against "
                                               f"v{s['baseline_version']}: {', '.join(s['regressions']) or 'none'}"
                                               if s["baseline_version"] is not None else ""))
    return "\n".join(lines)
