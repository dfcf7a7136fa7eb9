"""Which database a CLI command works on, said out loud, and never a new SQLite file by accident.

The default URL is a relative `./heddle.db`: run from another folder, a command used to create
an empty database there and work on it silently. Now every command names the database on
stderr (stdout stays one JSON object with --json), and a SQLite file that does not exist yet
is only created when asked: by naming the database (`--database-url` or
`HEDDLE_DATABASE_URL`), or by `heddle migrate` / `heddle serve`, whose job it is.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url

from heddle.config import get_settings


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
    default SQLite file does not exist and nobody asked for a new one."""
    settings = get_settings()
    url = database_url or settings.database_url
    explicit = bool(database_url) or "database_url" in settings.model_fields_set
    path = sqlite_file(url)
    if path is None or path.exists():
        return url, f"database: {describe(url)}"
    if explicit or may_create:
        return url, f"database: {describe(url)} (new: creating it)"
    raise DatabaseMissing(
        f"no Heddle database at {path}. Start the server first (`make serve` or `heddle serve` "
        "creates it), run this command where your heddle.db is, name one with --database-url or "
        "HEDDLE_DATABASE_URL, or create an empty one here with `heddle migrate`.")
