"""Migration 0009 on SQLite and PostgreSQL: an existing agent becomes version 1 and its runs
record version 1, so the engine (which reads the run's version) keeps running them."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import pytest
from sqlalchemy import MetaData, column, insert, select, table
from sqlalchemy.exc import IntegrityError

from heddle.db.base import create_engine
from heddle.db.migrate import upgrade
from heddle.tables import Base


def _at_0008(table_name: str, /, **values):
    """An INSERT typed like the models (UUIDs, UTC times) naming only columns 0008 has."""
    model = Base.metadata.tables[table_name]
    return insert(table(table_name, *(column(k, model.c[k].type) for k in values))).values(**values)


async def _seed_at_0008(url: str) -> tuple[str, uuid.UUID]:
    await upgrade(url, "0008")
    engine = create_engine(url)
    now = dt.datetime.now(dt.UTC)
    run_id = uuid.uuid4()
    thread_id = uuid.uuid4()
    try:
        async with engine.begin() as conn:
            await conn.execute(_at_0008("workspaces",
                id="ws_old", name="old", balance_micro=0, allowed_origins=[], request_secret="rs_x",
                realtime_enabled=True, created_at=now, updated_at=now))
            await conn.execute(_at_0008("agents",
                id="agent_old", workspace_id="ws_old", name="Old", model_class="scripted",
                instructions="Be old.", tools=[{"builtin": "identify"}], created_at=now))
            await conn.execute(_at_0008("threads",
                id=thread_id, workspace_id="ws_old", agent_id="agent_old", subject="web:a", created_at=now))
            await conn.execute(_at_0008("runs",
                id=run_id, thread_id=thread_id, workspace_id="ws_old", agent_id="agent_old", subject="web:a",
                state="closed", auth_mode="relay", cost_micro=0, turn_count=1, fence=0, opened_at=now,
                created_at=now, updated_at=now))
    finally:
        await engine.dispose()
    return "agent_old", run_id


async def _check(url: str) -> None:
    agent_id, run_id = await _seed_at_0008(url)
    await upgrade(url)
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            meta = MetaData()
            await conn.run_sync(lambda c: meta.reflect(c))
            t = meta.tables
            assert {"operators", "operator_login_tokens", "operator_sessions", "agent_versions"} <= set(t)
            version = (await conn.execute(select(t["agent_versions"]))).mappings().one()
            assert version["agent_id"] == agent_id and version["version"] == 1
            assert version["instructions"] == "Be old." and version["tools"] == [{"builtin": "identify"}]
            assert (await conn.execute(select(t["agents"].c.version))).scalar_one() == 1
            assert (await conn.execute(select(t["runs"].c.agent_version))).scalar_one() == 1
            indexes = {ix.name for ix in t["runs"].indexes}
            assert {"ix_runs_workspace_created", "ix_runs_workspace_updated"} <= indexes
    finally:
        await engine.dispose()
    await upgrade(url)  # idempotent
    engine = create_engine(url)
    try:  # one operator per email whatever its case: the unique lower-cased key
        now = dt.datetime.now(dt.UTC)
        async with engine.begin() as conn:
            await conn.execute(_at_0008("operators", id="op_1", email="A@x.io", email_key="a@x.io", created_at=now))
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(_at_0008("operators", id="op_2", email="a@X.io", email_key="a@x.io",
                                            created_at=now))
    finally:
        await engine.dispose()


def test_migration_0009(db_url):
    asyncio.run(_check(db_url))
