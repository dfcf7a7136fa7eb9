"""How every CLI command prints: one JSON object with --json, readable text otherwise."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Table

T = TypeVar("T")
console = Console()
err_console = Console(stderr=True)

DatabaseUrl = typer.Option(None, "--database-url", metavar="URL",
                           help="Database URL (default: HEDDLE_DATABASE_URL).")
JsonFlag = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else.")
PortFile = typer.Option(None, "--port-file", metavar="FILE", help="Once listening, write the port to this file "
                                                                  "(with --port 0: the port the system chose).")


def table(*columns: str, numeric: tuple[str, ...] = ()) -> Table:
    """A table that wraps long cells instead of cutting them: an id, a timestamp or a ref cut
    with an ellipsis at 80 columns cannot be copied. Columns named in `numeric` align right."""
    t = Table()
    for name in columns:
        t.add_column(name, overflow="fold", justify="right" if name in numeric else "left")
    return t


def when(iso_time: str | None) -> str:
    """`2026-11-26T00:43:25.123456+00:00` as `2026-11-26 00:43:25` (UTC, as stored)."""
    return (iso_time or "").replace("T", " ")[:19]


def emit(data: dict[str, Any], as_json: bool, human: Callable[[dict[str, Any]], None] | None = None) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, default=str) + "\n")
    elif human:
        human(data)
    else:
        console.print_json(json.dumps(data, default=str))


def fail(message: str, as_json: bool, code: str = "invalid_argument", exit_code: int = 1) -> NoReturn:
    if as_json:
        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    else:
        # soft_wrap: a command quoted in the message stays on one line, pasteable
        err_console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(exit_code)


def run_db(database_url: str | None, work: Callable[[Any], Awaitable[T]], *, may_create: bool = False) -> T:
    """Migrate, then run `work(session)` in one transaction (nothing half-written on error).

    Says which database on stderr; raises DatabaseMissing rather than create a SQLite file
    nobody asked for (heddle.cli.database); DatabaseUnreachable, one sentence, when PostgreSQL
    cannot be connected to (heddle.db.connection_errors).
    """
    import asyncio

    from heddle.cli.database import resolve as resolve_database
    from heddle.db.base import Database
    from heddle.db.connection_errors import DatabaseUnreachable, connection_problem
    from heddle.db.migrate import upgrade

    url, line = resolve_database(database_url, may_create=may_create)
    sys.stderr.write(line + "\n")  # plain: a path must not be wrapped or styled

    async def main() -> T:
        db = Database(url)
        try:
            await upgrade(url, engine=db.engine)
            async with db.transaction() as session:
                return await work(session)
        finally:
            await db.dispose()

    try:
        return asyncio.run(main())
    except Exception as exc:
        problem = connection_problem(exc, url)
        if problem is None:
            raise
        raise DatabaseUnreachable(problem) from None
