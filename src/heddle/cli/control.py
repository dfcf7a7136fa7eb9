"""Control-plane commands: workspaces, keys, connections, agents and credits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from heddle.billing import service as billing
from heddle.cli.config_errors import exit_with, is_settings_error, settings_problem
from heddle.cli.database import DatabaseMissing
from heddle.cli.output import DatabaseUrl, JsonFlag, console, emit, fail, run_db
from heddle.config import get_settings
from heddle.loom import agents as agent_service
from heddle.loom.agent_file import AgentFileError, load_agent_file
from heddle.money import to_credits, to_micro
from heddle.outbound.safe_http import validate_outbound_url
from heddle.webhooks import service as webhook_service
from heddle.workspaces import service as ws_service

workspace_app = typer.Typer(help="Create and configure workspaces.", no_args_is_help=True)
key_app = typer.Typer(help="Workspace API keys.", no_args_is_help=True)
connection_app = typer.Typer(help="Connections: hosts of your tools.", no_args_is_help=True)
agent_app = typer.Typer(help="Agents, from an agent file.", no_args_is_help=True)
credits_app = typer.Typer(help="Grant and inspect credits.", no_args_is_help=True)

_EXPECTED = (ValueError, LookupError)


def _guard(as_json: bool, call):
    try:
        return call()
    except DatabaseMissing as exc:
        fail(str(exc), as_json, code="database_missing")
    except ws_service.NotFound as exc:
        fail(str(exc).strip("'\""), as_json, code="not_found")
    except _EXPECTED as exc:
        if is_settings_error(exc):  # a bad HEDDLE_* value, not a bad argument
            exit_with(settings_problem(exc))
        fail(str(exc).strip("'\""), as_json)


DevFlag = typer.Option(False, "--dev", help="Accept http and loopback/private URLs (local development; the "
                       "server must run with --dev too). Also HEDDLE_OUTBOUND_ALLOW_PRIVATE=true.")


def _outbound_url(value: str | None, option: str, dev: bool, as_json: bool) -> str | None:
    """Check a URL Heddle will call with the same strict rules as the calls themselves, when it
    is saved rather than when a run first needs it; None or '' (clear) pass through."""
    if not value:
        return value
    allow_private = dev or get_settings().allow_private_outbound
    try:
        validate_outbound_url(value, allow_private)
    except ValueError as exc:
        hint = "" if allow_private else " To save it for local development, add --dev."
        fail(f"{option} {value!r} refused: {exc}.{hint}", as_json, code="invalid_url")
    return value


def known_model_classes() -> list[str]:
    from heddle.loom.providers.registry import ModelRegistry

    return ModelRegistry.from_json(get_settings().model_classes).names()


@workspace_app.command("create")
def workspace_create(name: str = typer.Option(..., "--name"), credits: float = typer.Option(0, "--credits", min=0),
                     database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    async def work(s):
        ws = await ws_service.create_workspace(s, name, credits)
        return {"id": ws.id, "name": ws.name, "balance_credits": to_credits(ws.balance_micro)}

    data = _guard(as_json, lambda: run_db(database_url, work))
    emit(data, as_json, lambda d: console.print(f"Created workspace [bold]{d['id']}[/bold] ({d['name']}) "
                                                f"with {d['balance_credits']} credits."))


@workspace_app.command("update")
def workspace_update(
    workspace: str = typer.Argument(..., help="Workspace id (ws_…)"),
    jwks_uri: str | None = typer.Option(None, "--jwks-uri", help="URL of your public JWKS ('' clears)."),
    jwks_file: Path | None = typer.Option(None, "--jwks-file", help="Paste a public JWKS from a file."),
    allowed_origin: list[str] | None = typer.Option(None, "--allowed-origin",
                                                    help="Exact scheme://host[:port]; repeat; replaces the list."),
    clear_origins: bool = typer.Option(False, "--clear-origins", help="Remove every allowed origin."),
    mint_url: str | None = typer.Option(None, "--mint-url", help="Your subject-token mint endpoint ('' clears)."),
    rotate_request_secret: bool = typer.Option(False, "--rotate-request-secret"),
    realtime: str | None = typer.Option(None, "--realtime", help="on or off"),
    rate_limit_per_key: str | None = typer.Option(
        None, "--rate-limit-per-key", help="Requests per API key, e.g. '100/second;3000/minute', 'off' or 'default'."),
    rate_limit_per_subject: str | None = typer.Option(
        None, "--rate-limit-per-subject", help="Requests per subject, e.g. '10/second;300/minute', 'off', 'default'."),
    retention_days: int | None = typer.Option(None, "--retention-days",
                                              help="Erase threads idle this many days (0 keeps them)."),
    webhook_url: str | None = typer.Option(None, "--webhook-url",
                                           help="Where run webhooks are POSTed ('' removes the webhook)."),
    rotate_webhook_secret: bool = typer.Option(False, "--rotate-webhook-secret"),
    dev: bool = DevFlag, database_url: str = DatabaseUrl, as_json: bool = JsonFlag,
):
    jwks_json: dict[str, Any] | None = None
    if jwks_file is not None:
        try:
            jwks_json = json.loads(jwks_file.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            fail(f"--jwks-file {jwks_file}: {exc}", as_json)
    if realtime not in (None, "on", "off"):
        fail("--realtime must be on or off", as_json)
    origins = [] if clear_origins else (list(allowed_origin) if allowed_origin else None)
    jwks_uri = _outbound_url(jwks_uri, "--jwks-uri", dev, as_json)
    mint_url = _outbound_url(mint_url, "--mint-url", dev, as_json)

    async def work(s):
        ws = await ws_service.update_workspace(
            s, workspace, jwks_uri=jwks_uri, jwks_json=jwks_json, allowed_origins=origins,
            mint_url=mint_url, rotate_request_secret=rotate_request_secret,
            realtime=None if realtime is None else realtime == "on",
            rate_limit_per_key=rate_limit_per_key, rate_limit_per_subject=rate_limit_per_subject,
            retention_days=retention_days)
        endpoint = await webhook_service.configure(s, workspace, url=webhook_url,
                                                   rotate_secret=rotate_webhook_secret)
        return {**ws_service.workspace_dict(ws, reveal_secret=True),
                **webhook_service.endpoint_fields(endpoint, reveal_secret=True)}

    emit(_guard(as_json, lambda: run_db(database_url, work)), as_json)


@workspace_app.command("show")
def workspace_show(workspace: str = typer.Argument(...), database_url: str = DatabaseUrl,
                   as_json: bool = JsonFlag):
    async def work(s):
        ws = await ws_service.get_workspace(s, workspace)
        data = ws_service.workspace_dict(ws, reveal_secret=False)
        data.update(webhook_service.endpoint_fields(await webhook_service.endpoint_for(s, workspace),
                                                    reveal_secret=False))
        data["keys"] = [ws_service.key_dict(k) for k in await ws_service.list_keys(s, workspace)]
        data["connections"] = [ws_service.connection_dict(c)
                               for c in await ws_service.list_connections(s, workspace)]
        data["agents"] = [{"id": a.id, "name": a.name, "model_class": a.model_class}
                          for a in await agent_service.list_agents(s, workspace)]
        return data

    emit(_guard(as_json, lambda: run_db(database_url, work)), as_json)


@key_app.command("create")
def key_create(workspace: str = typer.Option(..., "--workspace"), mode: str = typer.Option("live", "--mode"),
               database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    async def work(s):
        key, secret = await ws_service.create_key(s, workspace, mode)
        return {"id": key.id, "secret": secret}

    data = _guard(as_json, lambda: run_db(database_url, work))
    emit(data, as_json, lambda d: console.print(
        f"Key [bold]{d['id']}[/bold]\nSecret (shown once, keep it on your server): {d['secret']}",
        highlight=False))


@key_app.command("revoke")
def key_revoke(key_id: str = typer.Argument(...), database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    async def work(s):
        key = await ws_service.revoke_key(s, key_id)
        return {"id": key.id, "revoked": True}

    emit(_guard(as_json, lambda: run_db(database_url, work)), as_json)


@connection_app.command("create")
def connection_create(workspace: str = typer.Option(..., "--workspace"), name: str = typer.Option(..., "--name"),
                      base_url: str = typer.Option(..., "--base-url"), dev: bool = DevFlag,
                      database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    base_url = _outbound_url(base_url, "--base-url", dev, as_json)

    async def work(s):
        conn = await ws_service.create_connection(s, workspace, name, base_url)
        return {"id": str(conn.id), "name": conn.name, "base_url": conn.base_url}

    emit(_guard(as_json, lambda: run_db(database_url, work)), as_json)


@agent_app.command("create")
def agent_create(workspace: str = typer.Option(..., "--workspace"),
                 file: Path = typer.Option(..., "--file", help="Agent file (YAML or JSON)."),
                 database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    try:
        spec = load_agent_file(file)
        classes = known_model_classes()
    except (AgentFileError, ValueError) as exc:
        fail(str(exc), as_json)

    async def work(s):
        agent = await agent_service.create_agent(s, workspace, spec, classes)
        return agent_service.agent_dict(agent)

    emit(_guard(as_json, lambda: run_db(database_url, work)), as_json)


def _ledger_table(d: dict[str, Any]) -> None:
    console.print(f"Workspace {d['workspace_id']}: balance [bold]{d['balance_credits']}[/bold] credits")
    table = Table("id", "kind", "reason", "amount", "balance after", "ref", "at")
    for e in d["ledger"]:
        table.add_row(str(e["id"]), e["kind"], e["reason"], str(e["amount_credits"]),
                      str(e["balance_after_credits"]), e["ref"] or "", e["created_at"])
    console.print(table)


async def _credits_view(s, workspace: str) -> dict[str, Any]:
    ws = await ws_service.get_workspace(s, workspace)
    entries = await billing.recent_entries(s, workspace)
    return {"workspace_id": ws.id, "balance_credits": to_credits(ws.balance_micro),
            "ledger": [billing.entry_dict(e) for e in entries]}


@credits_app.command("grant")
def credits_grant(workspace: str = typer.Argument(...), amount: float = typer.Argument(...),
                  database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    if amount <= 0:
        fail("AMOUNT must be positive", as_json)

    async def work(s):
        await ws_service.get_workspace(s, workspace)
        await billing.grant(s, workspace, to_micro(amount))
        return await _credits_view(s, workspace)

    emit(_guard(as_json, lambda: run_db(database_url, work)), as_json, _ledger_table)


@credits_app.command("show")
def credits_show(workspace: str = typer.Argument(...), database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    emit(_guard(as_json, lambda: run_db(database_url, lambda s: _credits_view(s, workspace))), as_json,
         _ledger_table)


@key_app.command("generate-jwk")
def key_generate_jwk(
    alg: str = typer.Option("ES256", "--alg", help="RS256/384/512, ES256/384/512 or PS256/384/512."),
    kid: str | None = typer.Option(None, "--kid", help="Key id (default: generated)."),
    out: Path = typer.Option(Path("heddle-keys"), "--out", help="Directory for private.pem and jwks.json."),
    rsa_bits: int = typer.Option(3072, "--rsa-bits", min=2048, max=8192),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing private.pem there."),
    merge_into: Path | None = typer.Option(None, "--merge-into",
                                           help="An existing JWKS to publish the new key beside (rotation)."),
    as_json: bool = JsonFlag,
):
    """Generate a signing keypair for session tokens: private.pem (keep it) and jwks.json (publish it)."""
    from heddle.auth.jwk_keys import merge_jwks, write_keypair

    try:
        files = write_keypair(out, alg=alg, kid=kid, rsa_bits=rsa_bits, overwrite=overwrite)
        if merge_into is not None:
            merged = merge_jwks(json.loads(merge_into.read_text()), json.loads(files.jwks.read_text()))
            files.jwks.write_text(json.dumps(merged, indent=2) + "\n")
    except (ValueError, OSError, json.JSONDecodeError, FileExistsError) as exc:
        fail(str(exc), as_json)
    data = {"kid": files.kid, "alg": files.alg, "private_key": str(files.private_key), "jwks": str(files.jwks)}
    emit(data, as_json, lambda d: console.print(
        f"Key [bold]{d['kid']}[/bold] ({d['alg']})\n  private key: {d['private_key']} (keep it on your server)\n"
        f"  public JWKS: {d['jwks']} (heddle workspace update WS --jwks-file {d['jwks']})", highlight=False))
