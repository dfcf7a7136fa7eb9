"""`heddle up --workers N`: the multi-process layout on one machine (PostgreSQL).

One `heddle serve` (API + built-in realtime, enqueues only) and N `heddle worker`s, as child
processes sharing the database, the event bus and the realtime credentials. For development
and trials; in production run the same commands under your process manager (docs/operations.md).

Every child must answer /healthz within `--start-seconds`; a child that exits, or is not healthy
in time, stops the others and `heddle up` exits 1 naming the child and its reason.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import tempfile
import time

import typer

from heddle.cli.output import DatabaseUrl


def up(workers: int = typer.Option(2, "--workers", min=1, max=64, help="Worker processes to start."),
       port: int = typer.Option(8080, "--port", min=0, max=65535,
                                help="API port; workers' health ports follow it (0: every process picks a free one)."),
       concurrency: int | None = typer.Option(None, "--concurrency", min=1, help="Runs per worker at once."),
       start_seconds: float = typer.Option(120, "--start-seconds", min=1,
                                           help="How long each process may take to answer /healthz."),
       dev: bool = typer.Option(False, "--dev", help="As `heddle serve --dev`."),
       database_url: str = DatabaseUrl):
    """Start the API and N workers locally (HEDDLE_EXECUTOR=queue on PostgreSQL); Ctrl-C stops all."""
    from heddle.cli.children import Child, port_file, wait_until_healthy
    from heddle.cli.database import check_reachable
    from heddle.config import Settings
    from heddle.db.migrate import upgrade_sync
    from heddle.deployment import DeploymentError, check_deployment

    # The children inherit this process's environment, completed here.
    env = os.environ
    env["HEDDLE_EXECUTOR"] = "queue"
    if database_url:
        env["HEDDLE_DATABASE_URL"] = database_url
    env.setdefault("HEDDLE_EVENT_BUS", "postgres")
    # One set of built-in realtime credentials for every child, made here unless configured.
    env.setdefault("HEDDLE_PUSHER_APP_ID", "heddle-local")
    env.setdefault("HEDDLE_PUSHER_KEY", f"heddle-{secrets.token_hex(8)}")
    env.setdefault("HEDDLE_PUSHER_SECRET", secrets.token_urlsafe(32))
    settings = Settings()
    try:
        check_deployment(settings)
    except DeploymentError as exc:
        typer.echo(f"heddle up: refusing to start: {exc}", err=True)
        raise typer.Exit(2) from None
    check_reachable(settings.database_url)  # a wrong URL: one line, before any child starts
    upgrade_sync(settings.database_url)  # once, before the children start
    env["HEDDLE_MIGRATE_ON_START"] = "false"
    stopping = False

    def stop(*_args) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    with tempfile.TemporaryDirectory(prefix="heddle-up-") as ports:
        children = [Child(name, command, port_file(ports, name), settings.host)
                    for name, command in _commands(workers, port, concurrency, dev)]
        failed = wait_until_healthy(children, start_seconds, lambda: stopping)
        if failed is None and not stopping:
            worker_ports = ", ".join(str(child.port) for child in children[1:])
            typer.echo(f"heddle up: API on http://{settings.host}:{children[0].port}, {workers} worker(s) "
                       f"with health on port(s) {worker_ports}; Ctrl-C stops them.", err=True)
            while not stopping and failed is None:
                failed = next((f"{child.name} {why}" for child in children
                               if (why := child.failure()) is not None), None)
                time.sleep(0.2)
        for child in children:
            child.stop()
        codes = [child.wait() for child in children]
    if failed is not None:
        typer.echo(f"heddle up: {failed}; stopped the others.", err=True)
        raise typer.Exit(1)
    # uvicorn re-raises the SIGTERM it handled once it has shut down: -15 is a clean stop.
    if any(code not in (0, -signal.SIGTERM) for code in codes):
        typer.echo(f"heddle up: exit codes {codes} (API first)", err=True)
        raise typer.Exit(1)


def _commands(workers: int, port: int, concurrency: int | None, dev: bool) -> list[tuple[str, list[str]]]:
    """(name, command) of each child: the API first, then the workers on the ports after it."""
    heddle = [sys.executable, "-m", "heddle"]
    commands = [("api", [*heddle, "serve", "--port", str(port), *(["--dev"] if dev else [])])]
    for i in range(1, workers + 1):
        command = [*heddle, "worker", "--port", str(port + i if port else 0)]
        commands.append((f"worker {i}", command + (["--concurrency", str(concurrency)] if concurrency else [])))
    return commands
