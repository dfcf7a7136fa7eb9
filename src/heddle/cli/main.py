"""The `heddle` command: serve the API and manage the control plane."""

from __future__ import annotations

import typer

from heddle.cli.control import agent_app, connection_app, credits_app, key_app, workspace_app
from heddle.cli.demo import demo
from heddle.cli.output import DatabaseUrl, JsonFlag, emit, run_db
from heddle.identify.cli import app as identify_app

app = typer.Typer(help="Heddle: Identify and Loom, self-hosted.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
app.add_typer(workspace_app, name="workspace")
app.add_typer(key_app, name="key")
app.add_typer(connection_app, name="connection")
app.add_typer(agent_app, name="agent")
app.add_typer(credits_app, name="credits")
app.command("demo")(demo)
app.add_typer(identify_app, name="identify", help="Identify directories: import official files, show coverage.")


@app.command()
def serve(host: str | None = typer.Option(None, "--host", help="Default 127.0.0.1 (HEDDLE_HOST)."),
          port: int | None = typer.Option(None, "--port", help="Default 8080 (HEDDLE_PORT)."),
          dev: bool = typer.Option(False, "--dev", help="Allow loopback/private outbound targets; readable logs."),
          database_url: str = DatabaseUrl):
    """Run the API, the run engine and the realtime server in one process."""
    import uvicorn

    from heddle.app import create_app
    from heddle.config import Settings
    from heddle.db import sqlite_owner

    overrides: dict = {}
    if database_url:
        overrides["database_url"] = database_url
    if host:
        overrides["host"] = host
    if port:
        overrides["port"] = port
    if dev:
        overrides.update(dev=True, log_json=False)
    settings = Settings(**overrides)
    try:  # held until the process exits; refused in one clear line rather than a start-up traceback
        sqlite_owner.hold(settings.database_url)
    except sqlite_owner.DatabaseInUse as exc:
        typer.echo(f"heddle serve: {exc}", err=True)
        raise typer.Exit(1) from None
    # 64 KiB WebSocket frames at most: the Pusher protocol's own limit is 10 KiB per message.
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, ws="websockets-sansio",
                ws_max_size=64 * 1024, log_level=settings.log_level.lower(), access_log=False, lifespan="on")


@app.command()
def migrate(database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    """Upgrade the database schema to the latest migration."""
    async def work(_session):
        return {"migrated": True}

    emit(run_db(database_url, work), as_json, lambda d: print("Database is at the latest migration."))


def main() -> None:
    app()
