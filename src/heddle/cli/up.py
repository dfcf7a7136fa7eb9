"""`heddle up --workers N`: the multi-process layout on one machine (PostgreSQL).

One `heddle serve` (API + built-in realtime, enqueues only) and N `heddle worker`s, as child
processes sharing the database, the event bus and the realtime credentials. For development
and trials; in production run the same commands under your process manager (docs/operations.md).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time

import typer

from heddle.cli.output import DatabaseUrl


def up(workers: int = typer.Option(2, "--workers", min=1, max=64, help="Worker processes to start."),
       port: int = typer.Option(8080, "--port", help="API port; workers' health ports follow it."),
       concurrency: int | None = typer.Option(None, "--concurrency", min=1, help="Runs per worker at once."),
       dev: bool = typer.Option(False, "--dev", help="As `heddle serve --dev`."),
       database_url: str = DatabaseUrl):
    """Start the API and N workers locally (HEDDLE_EXECUTOR=queue on PostgreSQL); Ctrl-C stops all."""
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
    upgrade_sync(settings.database_url)  # once, before the children start
    env["HEDDLE_MIGRATE_ON_START"] = "false"
    heddle = [sys.executable, "-m", "heddle"]
    extra = ["--dev"] if dev else []
    commands = [[*heddle, "serve", "--port", str(port), *extra]]
    for i in range(workers):
        cmd = [*heddle, "worker", "--port", str(port + 1 + i)]
        commands.append(cmd + (["--concurrency", str(concurrency)] if concurrency else []))
    children = [subprocess.Popen(cmd) for cmd in commands]
    typer.echo(f"heddle up: API on {settings.host}:{port}, {workers} worker(s) with health on ports "
               f"{port + 1}-{port + workers}; Ctrl-C stops them.", err=True)
    stopping = False

    def stop(*_args) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while not stopping and all(child.poll() is None for child in children):
        time.sleep(0.2)
    for child in children:  # SIGTERM: workers finish or hand back their runs
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    codes = [child.wait() for child in children]
    # uvicorn re-raises the SIGTERM it handled once it has shut down: -15 is a clean stop.
    if any(code not in (0, -signal.SIGTERM) for code in codes) or not stopping:
        typer.echo(f"heddle up: exit codes {codes} (API first)", err=True)
        raise typer.Exit(1)
