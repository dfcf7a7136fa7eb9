"""Which database a CLI command works on, said out loud, and never a new SQLite file by accident.

The default URL is a relative `./heddle.db`: run from another folder, a command used to create
an empty database there and work on it silently. Now every command names the database on
stderr (stdout stays one JSON object with --json), and a SQLite file that does not exist yet
is only created by `heddle migrate` or `heddle serve`, whose job it is. Naming a file that does
not exist (`--database-url` or `HEDDLE_DATABASE_URL`) is refused too: a typo in the name would
otherwise start an empty database and every command would quietly work on it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy.engine import make_url

from heddle.config import get_settings
from heddle.db.urls import check_database_url


class DatabaseMissing(LookupError):
    pass


def sqlite_file(url: str) -> Path | None:
    """The absolute path of a SQLite file URL; None for other databases and in-memory ones."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite"):
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).expanduser().resolve()


def describe(url: str) -> str:
    path = sqlite_file(url)
    if path is not None:
        return f"SQLite file {path}"
    return make_url(url).render_as_string(hide_password=True)


def resolve(database_url: str | None, *, may_create: bool = False) -> tuple[str, str]:
    """The URL to use and a line saying which database it is; DatabaseMissing when the
    SQLite file does not exist and the command is not one that creates it (`may_create`);
    DatabaseUrlError (one line, with the fix) for a URL Heddle cannot use."""
    settings = get_settings()
    url = check_database_url(database_url) if database_url else settings.database_url
    path = sqlite_file(url)
    if path is None or path.exists():
        return url, f"database: {describe(url)}"
    if may_create:
        return url, f"database: {describe(url)} (new: creating it)"
    if database_url or "database_url" in settings.model_fields_set:
        named = "--database-url" if database_url else "HEDDLE_DATABASE_URL"
        raise DatabaseMissing(
            f"no Heddle database at {path} (named by {named}); check the file name, or create it "
            f"with `heddle migrate --database-url {url}` or by starting `heddle serve` on it.")
    raise DatabaseMissing(
        f"no Heddle database at {path}. Start the server first (`make serve` or `heddle serve` "
        "creates it), run this command where your heddle.db is, name one with --database-url or "
        "HEDDLE_DATABASE_URL, or create an empty one here with `heddle migrate`.")


def check_reachable(url: str) -> None:
    """PostgreSQL: connect once now, so that a wrong host, port, database, user or TLS setting
    is one sentence (DatabaseUnreachable) before a server or worker starts, not a failed start-up."""
    from heddle.db.connection_errors import probe

    if make_url(url).drivername.startswith("postgresql"):
        asyncio.run(probe(url))
