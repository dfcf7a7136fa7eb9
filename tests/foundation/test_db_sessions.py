"""The kinds of database session (heddle/db/base.py) on real PostgreSQL, and where each is used.

On PostgreSQL a read session runs without a transaction block (each statement commits on its
own, as under READ COMMITTED it would take its own snapshot anyway), a write goes through one
transaction, a single-statement write commits by itself, and a streamed read (a server-side
cursor) has a transaction of its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import text

from heddle.db.base import Database

pytestmark = pytest.mark.postgres

SRC = Path(__file__).parents[2] / "src" / "heddle"
XID = text("SELECT txid_current()")  # assigns the statement's transaction an id: one per transaction


async def _xids(session, n: int = 2) -> set[int]:
    return {(await session.execute(XID)).scalar_one() for _ in range(n)}


async def test_a_read_session_runs_each_statement_outside_a_transaction_block(pg_url):
    db = Database(pg_url)
    try:
        async with db.session() as session:
            assert len(await _xids(session)) == 2, "each statement is a transaction of its own"
        async with db.transaction() as session:
            assert len(await _xids(session)) == 1, "a write transaction is one transaction"
        async with db.single_statement() as session:
            assert len(await _xids(session)) == 2
        async with db.streaming_session() as session:
            assert len(await _xids(session)) == 1
            await session.execute(text("CREATE TEMP TABLE t AS SELECT generate_series(1, 12000) AS n"))
            rows = [n async for (n,) in await session.stream(text("SELECT n FROM t").execution_options(yield_per=5000))]
            assert rows == list(range(1, 12001))
    finally:
        await db.dispose()


async def test_a_streamed_read_outside_a_transaction_is_refused_by_postgresql(pg_url):
    """Why `streaming_session` exists: a server-side cursor in a read session fails."""
    db = Database(pg_url)
    try:
        async with db.session() as session:
            with pytest.raises(Exception, match="outside of a transaction"):
                await session.stream(text("SELECT 1").execution_options(yield_per=10))
    finally:
        await db.dispose()


def test_every_streamed_read_in_the_code_is_in_a_streaming_session():
    offenders = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.AsyncWith):
                continue
            opened = [item.context_expr for item in node.items]
            calls = [n for stmt in node.body for n in ast.walk(stmt)
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "stream"
                     and isinstance(n.func.value, ast.Name) and n.func.value.id == "session"]
            if calls and not any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                                 and c.func.attr == "streaming_session" for c in opened):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []
