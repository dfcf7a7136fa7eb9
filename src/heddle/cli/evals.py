"""`heddle eval run`: a dataset of scripted conversations against an agent version, through the
real engine, optionally side by side with a baseline version (heddle/loom/evals/).

Exit codes: 0 when no case failed and none regressed, 1 otherwise (CI gates an agent change on
it), 2 when the eval was refused before anything ran (a bad dataset line, an unknown judge model
class, agent or version).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import typer

from heddle.cli.output import DatabaseUrl, JsonFlag, emit, fail

app = typer.Typer(help="Evals: run a dataset of conversations against an agent version.", no_args_is_help=True)

REFUSED = 2


@app.command("run")
def run(workspace: str = typer.Option(..., "--workspace", help="Workspace id (ws_…)."),
        agent: str = typer.Option(..., "--agent", help="Agent id (agent_…)."),
        dataset: str = typer.Option(..., "--dataset", help="JSONL file: one case a line "
                                    '{"name", "messages": [...], "expect": {...}}.'),
        version: int | None = typer.Option(None, "--version", min=1, help="Version to test (default: current)."),
        baseline_version: int | None = typer.Option(None, "--baseline-version", min=1,
                                                    help="Also run this version and name every regression."),
        concurrency: int = typer.Option(4, "--concurrency", min=1, max=100, help="Cases run at once."),
        timeout: float = typer.Option(120.0, "--case-timeout", min=1, help="Seconds a case may take."),
        as_json: bool = JsonFlag, database_url: str = DatabaseUrl):
    """Run every case in a fresh thread of a fresh test subject; a table per case and a summary
    (--json: {"summary": {"passed", "failed", "regressions"}, "cases": [...]}). Exit 1 on a
    failure or a regression."""
    from heddle.cli.database import resolve as resolve_database
    from heddle.loom.evals.dataset import DatasetError, load

    try:
        cases = load(dataset)
    except DatasetError as e:  # one line, with the line number; nothing ran
        fail(str(e), as_json, code="invalid_dataset", exit_code=REFUSED)
    url, line = resolve_database(database_url)
    sys.stderr.write(line + "\n")
    result = _run(url, workspace, agent, dataset, cases, version, baseline_version, concurrency, timeout)
    if "error" in result:
        fail(result["error"]["message"], as_json, code=result["error"]["code"], exit_code=REFUSED)
    from heddle.loom.evals import report

    emit(result, as_json, lambda data: sys.stdout.write(report.table(data) + "\n"))
    raise typer.Exit(0 if report.ok(result) else 1)


def _run(url: str, workspace: str, agent_id: str, dataset: str, cases: list, version: int | None,
         baseline_version: int | None, concurrency: int, timeout: float) -> dict[str, Any]:
    import asyncio

    from heddle.config import Settings
    from heddle.container import build_container
    from heddle.loom.agents import get_agent, get_version
    from heddle.loom.evals import report, runner
    from heddle.loom.evals.dataset import judges
    from heddle.loom.evals.judge import judge_with, unknown_judges

    def refused(code: str, message: str) -> dict[str, Any]:
        return {"error": {"code": code, "message": message}}

    async def main() -> dict[str, Any]:
        container = await build_container(Settings(database_url=url), role="eval")
        try:
            unknown = unknown_judges(container.registry, judges(cases))
            if unknown:
                return refused("unknown_model_class", f"judge model class(es) not configured on this server: "
                               f"{', '.join(unknown)} (configured: {', '.join(container.registry.names())})")
            async with container.db.session() as session:
                found = await get_agent(session, workspace, agent_id)
                if found is None:
                    return refused("agent_not_found", f"no agent {agent_id!r} in workspace {workspace!r}")
                tested = version or found.version
                for v in (tested, baseline_version):
                    if v is not None and await get_version(session, found.id, v) is None:
                        return refused("version_not_found", f"agent {agent_id} has no version {v} "
                                       f"(its versions: 1 to {found.version})")
            judge = judge_with(container.registry)
            started = time.monotonic()
            outcomes = await runner.run(container.db, container.uow, runner.Target(workspace, found.id, tested),
                                        cases, concurrency=concurrency, judge=judge, timeout=timeout,
                                        signals=container.run_events.signals)
            wall = time.monotonic() - started
            results = [report.case_result(workspace, c, o) for c, o in zip(cases, outcomes, strict=True)]
            baseline = None
            if baseline_version is not None:
                base = await runner.run(container.db, container.uow,
                                        runner.Target(workspace, found.id, baseline_version), cases,
                                        concurrency=concurrency, judge=judge, timeout=timeout,
                                        signals=container.run_events.signals)
                baseline = [report.case_result(workspace, c, o) for c, o in zip(cases, base, strict=True)]
            regressions = report.compare(results, baseline)
            result = {"summary": report.summary(results, regressions, version=tested,
                                                baseline_version=baseline_version, wall_seconds=wall),
                      "cases": results}
            async with container.db.transaction() as session:
                result["id"] = await report.store(session, workspace, found.id, dataset, result)
            return result
        finally:
            await container.aclose()

    return asyncio.run(main())


@app.command("list")
def list_evals(workspace: str = typer.Option(..., "--workspace", help="Workspace id (ws_…)."),
               agent: str | None = typer.Option(None, "--agent", help="Only this agent's evals."),
               as_json: bool = JsonFlag, database_url: str = DatabaseUrl):
    """The stored eval runs of a workspace, newest first."""
    from heddle.cli.output import run_db
    from heddle.loom.evals import report

    async def work(session):
        return {"items": await report.list_runs(session, workspace, agent)}

    emit(run_db(database_url, work), as_json)
