"""The Alembic migrations build exactly the schema the models declare (so none is forgotten)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

import heddle.app  # noqa: F401  (imports every domain's models)
from heddle.db.base import Base, create_engine
from heddle.db.migrate import upgrade


async def test_migrated_schema_matches_the_models(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    await upgrade(url)
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            diff = await conn.run_sync(
                lambda sync: compare_metadata(MigrationContext.configure(sync), Base.metadata))
    finally:
        await engine.dispose()
    assert diff == []
