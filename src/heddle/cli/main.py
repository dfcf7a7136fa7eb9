"""The `heddle` command: serve the API and manage the control plane.

Registering a command: a module under heddle/cli/ whose heavy imports sit inside its functions
(so that every `--help` stays fast, tests/cli/test_help.py), registered with one line at the end
(`app.add_typer` or `app.command`); a group whose module is heavy at import time goes in
`Commands.lazy` instead.
"""

from __future__ import annotations

import sys

import typer

from heddle import __version__
from heddle.cli.chat import chat
from heddle.cli.demo import demo
from heddle.cli.lazy import LazyGroup
from heddle.cli.operator import app as operator_app
from heddle.cli.output import DatabaseUrl, JsonFlag, PortFile, emit, run_db
from heddle.cli.up import up
from heddle.cli.webhooks import webhook_app
from heddle.cli.workspace_admin import agent_app, connection_app, credits_app, key_app, workspace_app


class Commands(LazyGroup):
    lazy = {  # name: ("module:Typer app", its line in `heddle --help`), imported when used
        "identify": ("heddle.identify.cli:app", "Identify directories: import official files, show coverage."),
        "eval": ("heddle.cli.evals:app", "Evals: run a dataset of conversations against an agent version."),
        "feedback": ("heddle.cli.feedback:app", "End users' feedback: export rated conversations as eval cases."),
    }


app = typer.Typer(cls=Commands, help="Heddle: Identify and Loom, self-hosted.", no_args_is_help=True,
                  pretty_exceptions_enable=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"heddle {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                          help="Print the version and exit.")) -> None:
    """Heddle: Identify and Loom, self-hosted."""


def _check_or_exit(settings, role: str) -> None:
    from heddle.deployment import DeploymentError, check_deployment

    try:
        check_deployment(settings, role=role)
    except DeploymentError as exc:
        typer.echo(f"heddle {role}: refusing to start: {exc}", err=True)
        raise typer.Exit(2) from None


def _listen_or_exit(role: str, host: str, port: int, port_file: str | None):
    """The listening socket, bound before anything starts; a taken port is one line and exit 1."""
    from heddle.serving import PortUnavailable, listen

    try:
        return listen(host, port, port_file)
    except PortUnavailable as exc:
        typer.echo(f"heddle {role}: refusing to start: {exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def serve(host: str | None = typer.Option(None, "--host", help="Default 127.0.0.1 (HEDDLE_HOST)."),
          port: int | None = typer.Option(None, "--port", help="Default 8080 (HEDDLE_PORT)."),
          dev: bool = typer.Option(False, "--dev", help="Allow loopback/private outbound targets; readable logs."),
          port_file: str | None = PortFile, database_url: str = DatabaseUrl):
    """Run the API, the run engine and the realtime server in one process."""
    from heddle.cli.config_errors import check_serving_config
    from heddle.cli.database import check_reachable
    from heddle.cli.database import resolve as resolve_database
    from heddle.config import Settings
    from heddle.db import sqlite_owner
    from heddle.serving import raise_open_files_limit

    overrides: dict = {}
    if database_url:
        overrides["database_url"] = database_url
    if host:
        overrides["host"] = host
    if port is not None:
        overrides["port"] = port
    if dev:
        overrides.update(dev=True, log_json=False)
    settings = Settings(**overrides)
    _check_or_exit(settings, "serve")  # settings that cannot work together, before any connection
    # PostgreSQL: a wrong URL is one line, not a failed start-up (before the model classes' check,
    # which imports the providers' SDKs: seconds on a busy machine; this answers at once)
    check_reachable(settings.database_url)
    check_serving_config(settings)
    sock = _listen_or_exit("serve", settings.host, settings.port, port_file)  # before the database is touched
    try:  # held until the process exits; refused in one clear line rather than a start-up traceback
        sqlite_owner.hold(settings.database_url)
    except sqlite_owner.DatabaseInUse as exc:
        typer.echo(f"heddle serve: {exc}", err=True)
        raise typer.Exit(1) from None
    _, database_line = resolve_database(settings.database_url, may_create=True)
    sys.stderr.write(f"Heddle on http://{settings.host}:{sock.getsockname()[1]} (API reference at /docs); "
                     f"{database_line}\n")
    if not settings.public_url and settings.host not in ("127.0.0.1", "localhost", "::1"):
        sys.stderr.write("heddle serve: HEDDLE_PUBLIC_URL is not set. The console accepts changes only from "
                         f"{settings.console_base_url()} and `heddle operator` links point there: set "
                         "HEDDLE_PUBLIC_URL to the URL operators use.\n")
    raise_open_files_limit()
    import uvicorn  # the server itself only now: a refusal above is said without importing it

    from heddle.app import create_app
    from heddle.serving import QuietServer, uvicorn_options

    app = create_app(settings)
    app.state.services.settle_heap = True  # this process's objects of start-up, frozen once built
    server = QuietServer(uvicorn.Config(app, **uvicorn_options(settings, app.state.services.metrics)))
    server.run(sockets=[sock])
    if not server.started:  # as uvicorn.run: a start-up that failed is not a clean exit
        raise typer.Exit(3)


@app.command()
def worker(concurrency: int | None = typer.Option(None, "--concurrency", min=1,
                                                  help="Runs executed at once (HEDDLE_WORKER_CONCURRENCY, 16)."),
           port: int | None = typer.Option(None, "--port", help="Health and metrics port (HEDDLE_WORKER_PORT)."),
           port_file: str | None = PortFile, database_url: str = DatabaseUrl):
    """Execute queued runs (HEDDLE_EXECUTOR=queue, PostgreSQL); SIGTERM finishes or hands back runs."""
    import asyncio

    from heddle.cli.database import check_reachable
    from heddle.config import Settings

    overrides: dict = {}
    if database_url:
        overrides["database_url"] = database_url
    if concurrency:
        overrides["worker_concurrency"] = concurrency
    if port is not None:
        overrides["worker_port"] = port
    settings = Settings(**overrides)
    _check_or_exit(settings, "worker")
    check_reachable(settings.database_url)
    health = None
    if settings.worker_port is not None:  # bound before the queue starts: a taken port is refused here
        health = _listen_or_exit("worker", settings.host, settings.worker_port, port_file)
        sys.stderr.write(f"Heddle worker; health and metrics on http://{settings.host}:{health.getsockname()[1]}\n")
    from heddle.observability.logging import configure_logging
    from heddle.worker.process import run_worker_process

    configure_logging(settings.log_level, settings.log_json)
    # uvloop where it is installed (uvicorn[standard] brings it), as `heddle serve` has through
    # uvicorn: a worker's time goes to socket round trips with the database, which uvloop makes
    # cheaper than asyncio's selector loop (a five-statement transaction: 3.3 -> 2.6 ms on the bench box).
    try:
        import uvloop
    except ImportError:  # pragma: no cover - a platform without uvloop
        runner = asyncio.run
    else:
        runner = uvloop.run
    runner(run_worker_process(
        settings, concurrency=settings.worker_concurrency, health_socket=health,
        shutdown_grace=settings.worker_shutdown_grace, heartbeat_seconds=settings.worker_heartbeat_seconds,
        stalled_seconds=settings.worker_stalled_seconds))


@app.command()
def migrate(database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    """Upgrade the database schema to the latest migration."""
    async def work(_session):
        return {"migrated": True}

    # Creating the database is this command's job, so a missing SQLite file is created.
    emit(run_db(database_url, work, may_create=True), as_json,
         lambda d: print("Database is at the latest migration."))


# After serve, worker and migrate (defined above), in `heddle --help`'s order:
app.command("up")(up)
app.command("chat")(chat)
app.command("demo")(demo)
app.add_typer(workspace_app, name="workspace")
app.add_typer(key_app, name="key")
app.add_typer(connection_app, name="connection")
app.add_typer(agent_app, name="agent")
app.add_typer(credits_app, name="credits")
app.add_typer(webhook_app, name="webhook")
app.add_typer(operator_app, name="operator")


def main() -> None:
    try:
        app()
    except Exception as exc:  # a bad setting or database URL, a database not reachable: one line
        from heddle.cli.config_errors import exit_with, one_line

        said = one_line(exc, sys.argv[1:])
        if said is None:
            raise
        exit_with(said[1], said[0])
