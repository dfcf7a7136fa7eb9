"""Run Alembic migrations programmatically (used by `heddle serve`, `heddle migrate` and tests).

On PostgreSQL the upgrade runs under a transaction-level advisory lock, so several processes
starting at once on one database take turns: the first migrates, the others wait for its
commit and then find nothing left to do (without it, two of them race on
`CREATE TABLE alembic_version` and one dies). SQLite needs none: it has one writer at a time
and, for serving, one server per file (heddle/db/sqlite_owner.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from heddle.db.base import create_engine

MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed 64-bit key, the same in every Heddle process: the ASCII of "heddlemg".
MIGRATION_LOCK_KEY = int.from_bytes(b"heddlemg", "big") & 0x7FFF_FFFF_FFFF_FFFF


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


async def upgrade(url: str, revision: str = "head", engine: AsyncEngine | None = None) -> None:
    """Upgrade the database at `url` to `revision`, on a connection of `engine` if given."""
    cfg = alembic_config(url)
    owned = engine is None
    engine = engine or create_engine(url)
    try:
        async with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Released at this transaction's end; the migrations run inside it.
                await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})

            def _run(sync_conn):
                cfg.attributes["connection"] = sync_conn
                command.upgrade(cfg, revision)

            await conn.run_sync(_run)
    finally:
        if owned:
            await engine.dispose()


def upgrade_sync(url: str, revision: str = "head") -> None:
    asyncio.run(upgrade(url, revision))
