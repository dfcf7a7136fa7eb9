"""`heddle feedback export`: end users' rated conversations as eval dataset lines."""

from __future__ import annotations

import json
import sys

import typer

from heddle.cli.output import DatabaseUrl

app = typer.Typer(help="End users' feedback on assistant messages.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """A group (`heddle feedback export`), even with one command."""


@app.command("export")
def export(workspace: str = typer.Option(..., "--workspace", help="Workspace id (ws_…)."),
           rating: str | None = typer.Option(None, "--rating", help="Only `up` or only `down` ratings."),
           since: str | None = typer.Option(None, "--since", help="Only feedback given since this ISO date or time."),
           jsonl: bool = typer.Option(False, "--jsonl", help="One dataset line per rated conversation (the "
                                      "default; the flag says so in scripts)."),
           database_url: str = DatabaseUrl):
    """Write each rated conversation as a dataset line for `heddle eval run`: the user messages up
    to the rated answer, the answer given and the feedback; write its `expect` yourself."""
    from heddle.cli.workspace_admin import guarded
    from heddle.control import feedback as control

    async def work(session):
        return await control.export_cases(session, workspace, rating=rating, since=control.since_of(since))

    for line in guarded(False, database_url, work):
        sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
