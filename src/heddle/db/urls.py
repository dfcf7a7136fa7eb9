"""Is this a database URL Heddle can use? One answer, in one line, with the fix in it.

Heddle runs on SQLite (aiosqlite) or PostgreSQL (asyncpg), both through SQLAlchemy's asyncio
extension. Left to SQLAlchemy, the common mistakes surface as tracebacks at first use
(`Can't load plugin: sqlalchemy.dialects:postgres`, `The asyncio extension requires an async
driver`). `check_database_url` turns each into a sentence naming the URL to use instead; the
settings validator and the CLI's `--database-url` both call it, so the server, the worker and
every command say the same thing. A password is never repeated back.
"""

from __future__ import annotations

import importlib.util

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

SQLITE = "sqlite+aiosqlite"
POSTGRES = "postgresql+asyncpg"
_EXAMPLES = f"{SQLITE}:///./heddle.db or {POSTGRES}://user:password@host:5432/heddle"
# Backend names people write, and the async driver Heddle needs for each.
_BACKENDS = {"sqlite": SQLITE, "postgresql": POSTGRES, "postgres": POSTGRES, "pgsql": POSTGRES}


class DatabaseUrlError(ValueError):
    """A database URL Heddle cannot use; the message says which one to use instead."""


def _shown(url: URL, drivername: str) -> str:
    return url.set(drivername=drivername).render_as_string(hide_password=True)


def check_database_url(value: str) -> str:
    """`value` unchanged when Heddle can use it; DatabaseUrlError saying what to write otherwise."""
    try:
        url = make_url(value)
    except ArgumentError:
        raise DatabaseUrlError(f"not a database URL; write one like {_EXAMPLES}") from None
    backend, _, driver = url.drivername.partition("+")
    wanted = _BACKENDS.get(backend)
    if wanted is None:
        raise DatabaseUrlError(f"Heddle runs on SQLite or PostgreSQL, not {backend!r}; write one like {_EXAMPLES}")
    if url.drivername != wanted:
        via = f"the {driver!r} driver" if driver else f"a plain {backend}:// URL"
        raise DatabaseUrlError(f"{via} is not supported (Heddle needs the async driver): "
                               f"use {_shown(url, wanted)}")
    if wanted == POSTGRES and importlib.util.find_spec("asyncpg") is None:
        raise DatabaseUrlError("the PostgreSQL driver is not installed: pip install 'heddle[postgres]' "
                               "(from a checkout: .venv/bin/pip install -e '.[postgres]')")
    return value
