"""Run Alembic migrations programmatically (used by `heddle serve`, `heddle migrate` and tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.ext.asyncio import AsyncEngine

from heddle.db.base import create_engine

MIGRATIONS = Path(__file__).parent / "migrations"


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
            def _run(sync_conn):
                cfg.attributes["connection"] = sync_conn
                command.upgrade(cfg, revision)

            await conn.run_sync(_run)
    finally:
        if owned:
            await engine.dispose()


def upgrade_sync(url: str, revision: str = "head") -> None:
    asyncio.run(upgrade(url, revision))
