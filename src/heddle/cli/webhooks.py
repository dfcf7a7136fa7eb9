"""`heddle webhook …`: the run webhooks a workspace is owed and every attempt made."""

from __future__ import annotations

from typing import Any

import typer

from heddle.cli.lazy import LazyModule
from heddle.cli.output import DatabaseUrl, JsonFlag, console, emit, table, when

webhook_service = LazyModule("heddle.webhooks.service")
ws_service = LazyModule("heddle.workspaces.service")

webhook_app = typer.Typer(help="Run webhooks: deliveries and their attempts.", no_args_is_help=True)


def _table(d: dict[str, Any]) -> None:
    console.print(f"Workspace {d['workspace_id']}: webhook URL {d['webhook_url'] or '(none)'}")
    rows = table("event id", "type", "run", "state", "attempts", "last status / error", "next attempt (UTC)",
                 "created (UTC)", numeric=("attempts",))
    for item in d["items"]:
        last = item["attempts"][-1] if item["attempts"] else {"http_status": None, "error": None}
        outcome = f"{last['http_status'] or ''} {last['error'] or ''}".strip()
        rows.add_row(item["id"], item["type"], item["run_id"] or "", item["state"], str(item["attempt_count"]),
                     outcome[:60], when(item["next_attempt_at"]), when(item["created_at"]))
    console.print(rows)


@webhook_app.command("deliveries")
def deliveries(workspace: str = typer.Argument(..., help="Workspace id (ws_…)"),
               limit: int = typer.Option(20, "--limit", min=1, max=500, help="How many, newest first."),
               state: str | None = typer.Option(None, "--state", help="pending, delivered or failed"),
               database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    """The newest webhook deliveries, each with every attempt (time, status, error)."""
    async def work(s):
        await ws_service.get_workspace(s, workspace)
        endpoint = await webhook_service.endpoint_for(s, workspace)
        items = await webhook_service.list_deliveries(s, workspace, limit=limit, state=state)
        return {"workspace_id": workspace, "webhook_url": endpoint.url if endpoint else None, "items": items}

    from heddle.cli.workspace_admin import guarded  # a missing database, an unknown workspace: one line each

    emit(guarded(as_json, database_url, work), as_json, _table)
