"""`heddle workspace|key|connection|agent|credits`: administering workspaces from the command line.

Thin: each command parses its options and calls heddle.control, the service layer the console
API calls too, so both give the same answers and refuse the same input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from heddle.cli.lazy import LazyModule
from heddle.cli.output import DatabaseUrl, JsonFlag, console, emit, fail, run_db, table, when

# The control plane and what it brings (SQLAlchemy, the schemas) is imported when a command
# runs, so that `--help` does not pay for it.
agents_control = LazyModule("heddle.control.agents")
credits_control = LazyModule("heddle.control.credits")
ws_control = LazyModule("heddle.control.workspaces")

if TYPE_CHECKING:
    from heddle.errors import HeddleError

workspace_app = typer.Typer(help="Create and configure workspaces.", no_args_is_help=True)
key_app = typer.Typer(help="Workspace API keys.", no_args_is_help=True)
connection_app = typer.Typer(help="Connections: hosts of your tools.", no_args_is_help=True)
agent_app = typer.Typer(help="Agents, from an agent file; every edit is a new version.", no_args_is_help=True)
credits_app = typer.Typer(help="Grant and inspect credits.", no_args_is_help=True)

CLI_ACTOR = "cli"  # `created_by` of agent versions made here


def _cli_code(err: HeddleError) -> str:
    """The CLI's error codes predate the console: keep them (`invalid_url`, `invalid_argument`)."""
    if err.code == "invalid_request":
        kinds = {d.get("type") for d in err.details or [] if isinstance(d, dict)}
        return "invalid_url" if "invalid_url" in kinds else "invalid_argument"
    return err.code


def guarded(as_json: bool, database_url: str | None, work) -> Any:
    """Run `work(session)` in one transaction; print a refusal the CLI's way and exit 1 (2 for a
    database that cannot be reached)."""
    from heddle.cli.config_errors import exit_with, is_settings_error, settings_problem
    from heddle.cli.database import DatabaseMissing
    from heddle.db.connection_errors import DatabaseUnreachable
    from heddle.db.urls import DatabaseUrlError
    from heddle.errors import HeddleError

    try:
        return run_db(database_url, work)
    except DatabaseMissing as exc:
        fail(str(exc), as_json, code="database_missing")
    except DatabaseUnreachable as exc:
        if not as_json:
            raise  # main() says it in one line with exit status 2
        fail(str(exc), as_json, code="database_unreachable", exit_code=2)
    except DatabaseUrlError:
        raise  # a configuration mistake: main() says it in one line with exit status 2
    except HeddleError as exc:
        fail(exc.message, as_json, code=_cli_code(exc))
    except (ValueError, LookupError) as exc:
        if is_settings_error(exc):  # a bad HEDDLE_* value, not a bad argument
            exit_with(settings_problem(exc))
        code = "not_found" if isinstance(exc, LookupError) else "invalid_argument"
        fail(str(exc).strip("'\""), as_json, code=code)


DevFlag = typer.Option(False, "--dev", help="Accept http and loopback/private URLs (local development; the "
                       "server must run with --dev too). Also HEDDLE_OUTBOUND_ALLOW_PRIVATE=true.")


def _policy(dev: bool):
    from heddle.config import get_settings
    from heddle.control.errors import OutboundPolicy

    return OutboundPolicy(allow_private=dev or get_settings().allow_private_outbound,
                          dev_hint="To save it for local development, add --dev.")


def known_model_classes() -> list[str]:
    from heddle.config import get_settings
    from heddle.loom.providers.registry import ModelRegistry

    return ModelRegistry.from_json(get_settings().model_classes).names()


def model_class_problem(model_class: str, known: list[str]) -> str | None:
    """The CLI checks an agent's model class against HEDDLE_MODEL_CLASSES *in its own shell*: a
    running server's configuration is not readable from here. Said so, with the fix."""
    import os

    if model_class in known:
        return None
    if os.environ.get("HEDDLE_MODEL_CLASSES"):
        where = f"HEDDLE_MODEL_CLASSES in this shell configures {', '.join(sorted(known))}"
    else:
        where = f"HEDDLE_MODEL_CLASSES is not set in this shell, so only {', '.join(sorted(known))} is known"
    return (f"model_class: unknown model class {model_class!r}: {where}. This command checks the agent "
            "file against its own environment, not a running server's: run it with the server's "
            "HEDDLE_MODEL_CLASSES set (export it, or prefix the command with it)")


@workspace_app.command("create", help='Create a workspace, optionally with starting credits.')
def workspace_create(name: str = typer.Option(..., "--name", help="A name people recognise."),
                     credits: float = typer.Option(0, "--credits", min=0, help="Starting credits."),
                     database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    async def work(s):
        data = await ws_control.create(s, name, credits)
        return {k: data[k] for k in ("id", "name", "balance_credits")}

    emit(guarded(as_json, database_url, work), as_json, lambda d: console.print(
        f"Created workspace [bold]{d['id']}[/bold] ({d['name']}) with {d['balance_credits']} credits."))


@workspace_app.command("list", help='Every workspace, with its balance.')
def workspace_list(database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    def human(d: dict[str, Any]) -> None:
        rows = table("id", "name", "balance", "created (UTC)", numeric=("balance",))
        for ws in d["items"]:
            rows.add_row(ws["id"], ws["name"], str(ws["balance_credits"]), when(ws["created_at"]))
        console.print(rows)

    emit(guarded(as_json, database_url, ws_control.list_all), as_json, human)


@workspace_app.command("update",
    help="Change a workspace's settings: direct mode, origins, mint URL, limits, webhook, retention.")
def workspace_update(
    workspace: str = typer.Argument(..., help="Workspace id (ws_…)"),
    jwks_uri: str | None = typer.Option(None, "--jwks-uri", help="URL of your public JWKS ('' clears)."),
    jwks_file: Path | None = typer.Option(None, "--jwks-file", help="Paste a public JWKS from a file."),
    allowed_origin: list[str] | None = typer.Option(None, "--allowed-origin",
                                                    help="Exact scheme://host[:port]; repeat; replaces the list."),
    clear_origins: bool = typer.Option(False, "--clear-origins", help="Remove every allowed origin."),
    mint_url: str | None = typer.Option(None, "--mint-url", help="Your subject-token mint endpoint ('' clears)."),
    rotate_request_secret: bool = typer.Option(False, "--rotate-request-secret",
                                               help="New secret for signing requests to your tool hosts."),
    realtime: str | None = typer.Option(None, "--realtime", help="on or off"),
    rate_limit_per_key: str | None = typer.Option(
        None, "--rate-limit-per-key", help="Requests per API key, e.g. '100/second;3000/minute', 'off' or 'default'."),
    rate_limit_per_subject: str | None = typer.Option(
        None, "--rate-limit-per-subject", help="Requests per subject, e.g. '10/second;300/minute', 'off', 'default'."),
    retention_days: int | None = typer.Option(None, "--retention-days",
                                              help="Erase threads idle this many days (0 keeps them)."),
    webhook_url: str | None = typer.Option(None, "--webhook-url",
                                           help="Where run webhooks are POSTed ('' removes the webhook)."),
    rotate_webhook_secret: bool = typer.Option(False, "--rotate-webhook-secret",
                                               help="New secret for signing webhook deliveries."),
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
    change = ws_control.SettingsChange(
        jwks_uri=jwks_uri, jwks=jwks_json, allowed_origins=[] if clear_origins else allowed_origin or None,
        mint_url=mint_url, realtime=None if realtime is None else realtime == "on",
        rate_limit_per_key=rate_limit_per_key, rate_limit_per_subject=rate_limit_per_subject,
        retention_days=retention_days, webhook_url=webhook_url,
        rotate_request_secret=rotate_request_secret, rotate_webhook_secret=rotate_webhook_secret)
    emit(guarded(as_json, database_url,
                 lambda s: ws_control.update(s, workspace, change, _policy(dev), reveal_secrets=True)), as_json)


@workspace_app.command("show", help="A workspace's settings and balance.")
def workspace_show(workspace: str = typer.Argument(..., help="Workspace id (ws_…)"), database_url: str = DatabaseUrl,
                   as_json: bool = JsonFlag):
    emit(guarded(as_json, database_url, lambda s: ws_control.show(s, workspace)), as_json)


@key_app.command("create", help='Create an API key; its secret is printed once.')
def key_create(workspace: str = typer.Option(..., "--workspace", help="Workspace id (ws_…)"),
               mode: str = typer.Option("live", "--mode", help="live or test."),
               database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    data = guarded(as_json, database_url, lambda s: ws_control.create_key(s, workspace, mode))
    emit(data, as_json, lambda d: console.print(
        f"Key [bold]{d['id']}[/bold]\nSecret (shown once, keep it on your server): {d['secret']}",
        highlight=False))


@key_app.command("revoke", help='Revoke an API key: requests with it are refused from now on.')
def key_revoke(key_id: str = typer.Argument(..., help="Key id (key_…)"), database_url: str = DatabaseUrl,
               as_json: bool = JsonFlag):
    emit(guarded(as_json, database_url, lambda s: ws_control.revoke_key(s, key_id)), as_json)


@connection_app.command("create", help='Register a host of your tools (its base URL) under a name.')
def connection_create(workspace: str = typer.Option(..., "--workspace", help="Workspace id (ws_…)"),
                      name: str = typer.Option(..., "--name", help="How agent files name it (connection:)."),
                      base_url: str = typer.Option(..., "--base-url",
                                                   help="https://host/prefix; tool paths follow it. For "
                                                        "--kind mcp: the MCP endpoint (https://host/mcp)."),
                      kind: str = typer.Option("http", "--kind",
                                               help="http (Heddle's signed-HTTP tools) or mcp (an MCP server)."),
                      dev: bool = DevFlag, database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    emit(guarded(as_json, database_url,
                 lambda s: ws_control.create_connection(s, workspace, name, base_url, _policy(dev), kind)),
         as_json)


def _agent_file(file: Path, as_json: bool):
    from heddle.loom.agent_file import AgentFileError, load_agent_file

    try:
        spec, known = load_agent_file(file), known_model_classes()
    except (AgentFileError, ValueError) as exc:
        fail(str(exc), as_json)
    if (problem := model_class_problem(spec.model_class, known)) is not None:
        fail(f"{file}: {problem}", as_json)
    return spec, known


@agent_app.command("create", help='Create an agent from an agent file (YAML or JSON).')
def agent_create(workspace: str = typer.Option(..., "--workspace", help="Workspace id (ws_…)"),
                 file: Path = typer.Option(..., "--file", help="Agent file (YAML or JSON)."),
                 database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    spec, classes = _agent_file(file, as_json)
    emit(guarded(as_json, database_url,
                 lambda s: agents_control.create(s, workspace, spec, classes, created_by=CLI_ACTOR)), as_json)


@agent_app.command("update")
def agent_update(agent: str = typer.Argument(..., help="Agent id (agent_…)"),
                 file: Path = typer.Option(..., "--file", help="The whole new agent file (YAML or JSON)."),
                 database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    """Replace the agent's definition: a new version. Runs already started keep theirs."""
    spec, classes = _agent_file(file, as_json)

    async def work(s):
        found = await agents_control.agent_anywhere(s, agent)
        return await agents_control.update(s, found, spec, classes, created_by=CLI_ACTOR)

    emit(guarded(as_json, database_url, work), as_json)


@agent_app.command("list", help="A workspace's agents, with their current version.")
def agent_list(workspace: str = typer.Option(..., "--workspace", help="Workspace id (ws_…)"),
               database_url: str = DatabaseUrl,
               as_json: bool = JsonFlag):
    def human(d: dict[str, Any]) -> None:
        rows = table("id", "name", "model class", "version", "created (UTC)", numeric=("version",))
        for a in d["items"]:
            rows.add_row(a["id"], a["name"], a["model_class"], str(a["version"]), when(a["created_at"]))
        console.print(rows)

    emit(guarded(as_json, database_url, lambda s: agents_control.list_agents(s, workspace)), as_json, human)


@agent_app.command("show", help="An agent's current definition, or one version's.")
def agent_show(agent: str = typer.Argument(..., help="Agent id (agent_…)"),
               version: int | None = typer.Option(None, "--version", min=1, help="Show this version's definition."),
               database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    async def work(s):
        found = await agents_control.agent_anywhere(s, agent)
        if version is not None:
            return await agents_control.version(s, found, version)
        return await agents_control.show(s, found)

    emit(guarded(as_json, database_url, work), as_json)


def _ledger_table(d: dict[str, Any]) -> None:
    console.print(f"Workspace {d['workspace_id']}: balance [bold]{d['balance_credits']}[/bold] credits")
    rows = table("id", "kind", "reason", "amount", "balance after", "ref", "at (UTC)",
                 numeric=("id", "amount", "balance after"))
    for e in d["ledger"]:
        rows.add_row(str(e["id"]), e["kind"], e["reason"], str(e["amount_credits"]),
                     str(e["balance_after_credits"]), e["ref"] or "", when(e["created_at"]))
    console.print(rows)


@credits_app.command("grant", help='Add credits to a workspace; prints the ledger.')
def credits_grant(workspace: str = typer.Argument(..., help="Workspace id (ws_…)"),
                  amount: float = typer.Argument(..., help="Credits to add (positive)."),
                  database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    if amount <= 0:
        fail("AMOUNT must be positive", as_json)
    emit(guarded(as_json, database_url, lambda s: credits_control.grant(s, workspace, amount)), as_json,
         _ledger_table)


@credits_app.command("show", help="A workspace's balance and its ledger, newest first.")
def credits_show(workspace: str = typer.Argument(..., help="Workspace id (ws_…)"), database_url: str = DatabaseUrl,
                 as_json: bool = JsonFlag):
    emit(guarded(as_json, database_url, lambda s: credits_control.view(s, workspace)), as_json, _ledger_table)


@key_app.command("generate-jwk")
def key_generate_jwk(
    alg: str = typer.Option("ES256", "--alg", help="RS256/384/512, ES256/384/512 or PS256/384/512."),
    kid: str | None = typer.Option(None, "--kid", help="Key id (default: generated)."),
    out: Path = typer.Option(Path("heddle-keys"), "--out", help="Directory for private.pem and jwks.json."),
    rsa_bits: int = typer.Option(3072, "--rsa-bits", min=2048, max=8192, help="RSA key size (RS/PS only)."),
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
