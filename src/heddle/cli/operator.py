"""`heddle operator …`: the people who may use the console, and their one-time login links."""

from __future__ import annotations

import typer

from heddle.cli.lazy import LazyModule
from heddle.cli.output import DatabaseUrl, JsonFlag, console, emit, table, when

service = LazyModule("heddle.operators.service")

app = typer.Typer(help="Console operators and their login links.", no_args_is_help=True)

EmailOption = typer.Option(..., "--email", help="The operator's email address (case does not matter).")


PublicUrlOption = typer.Option(
    "", "--public-url", metavar="URL", envvar="HEDDLE_PUBLIC_URL", show_envvar=True,
    help="Where operators reach the server (the server's own HEDDLE_PUBLIC_URL); links start with it.")


def _base_url(public_url: str) -> str:
    """The configured public URL; without one, http://{HEDDLE_HOST}:{HEDDLE_PORT}, with a warning:
    this process cannot know where a server started with other options listens."""
    from heddle.config import Settings, get_settings

    settings = get_settings()
    if public_url:
        try:
            return Settings(public_url=public_url).console_base_url()
        except ValueError:
            raise typer.BadParameter("must be an http(s) origin such as https://heddle.example.com",
                                     param_hint="--public-url") from None
    base = settings.console_base_url()
    if not settings.public_url:
        typer.echo(f"heddle operator: HEDDLE_PUBLIC_URL is not set, so this link assumes the server is at "
                   f"{base}. If it runs elsewhere, pass --public-url (or set HEDDLE_PUBLIC_URL, the same "
                   "value the server uses for its console's origin check).", err=True)
    return base


def _print_link(d: dict) -> None:
    from heddle.config import get_settings

    minutes = int(get_settings().console_link_ttl // 60)
    console.print(f"Operator [bold]{d['email']}[/bold] ({d['id']}). One-time login link, valid "
                  f"{minutes} minutes:\n{d['login_url']}", highlight=False, soft_wrap=True)


async def _with_link(s, op, base_url: str) -> dict:
    """The operator with a new one-time login link (the contract's `{id, email, login_url}`)."""
    from heddle.config import get_settings

    token = await service.new_login_token(s, op, get_settings().console_link_ttl)
    return {"id": op.id, "email": op.email, "login_url": service.login_url(base_url, token)}


@app.command("create")
def create(email: str = EmailOption, database_url: str = DatabaseUrl, as_json: bool = JsonFlag,
           public_url: str = PublicUrlOption):
    """Add an operator and print a one-time login link."""
    from heddle.cli.workspace_admin import guarded

    base_url = _base_url(public_url)

    async def work(s):
        return await _with_link(s, await service.create_operator(s, email), base_url)

    emit(guarded(as_json, database_url, work), as_json, _print_link)


@app.command("login-link")
def login_link(email: str = EmailOption, database_url: str = DatabaseUrl, as_json: bool = JsonFlag,
               public_url: str = PublicUrlOption):
    """A new one-time login link for an existing operator."""
    from heddle.cli.workspace_admin import guarded

    base_url = _base_url(public_url)

    async def work(s):
        return await _with_link(s, await service.by_email(s, email), base_url)

    emit(guarded(as_json, database_url, work), as_json, _print_link)


@app.command("list")
def list_(database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    """Every operator, with when it was disabled (if it was)."""
    from heddle.cli.workspace_admin import guarded

    async def work(s):
        return {"items": [service.operator_dict(op) for op in await service.list_operators(s)]}

    def human(d: dict) -> None:
        rows = table("id", "email", "created (UTC)", "disabled (UTC)")
        for op in d["items"]:
            rows.add_row(op["id"], op["email"], when(op["created_at"]), when(op["disabled_at"]))
        console.print(rows)

    emit(guarded(as_json, database_url, work), as_json, human)


@app.command("disable")
def disable(email: str = EmailOption, database_url: str = DatabaseUrl, as_json: bool = JsonFlag):
    """Disable an operator: its sessions end now and its links stop working."""
    from heddle.cli.workspace_admin import guarded

    async def work(s):
        op = await service.by_email(s, email)
        ended = await service.disable(s, op)
        return {**service.operator_dict(op), "sessions_ended": ended}

    emit(guarded(as_json, database_url, work), as_json,
         lambda d: console.print(f"Disabled {d['email']}; {d['sessions_ended']} session(s) ended."))
