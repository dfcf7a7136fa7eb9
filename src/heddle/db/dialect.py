"""What differs between the two databases Heddle runs on, named once.

Domain code never asks for a dialect's name: it asks one of these questions of the session it
writes with, so a rule such as "SQLite's single writer already serialises this" lives here and
nowhere else.

- SQLite (the embedded default) has one write transaction at a time for the whole database
  (`BEGIN IMMEDIATE`, heddle/db/base.py): a row lock would serialise nothing more, and
  `SELECT ... FOR UPDATE` does not exist there.
- PostgreSQL has many writers: two transactions that must not interleave take the same row
  lock first. Each statement is a network round trip there, so a statement saved is worth a
  more complex one (a CTE that updates and inserts, a `RETURNING` of more than the row).
"""

from __future__ import annotations

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession


def one_writer(session: AsyncSession) -> bool:
    """True when the database admits one write transaction at a time (SQLite)."""
    return session.bind.dialect.name == "sqlite"


def for_update(session: AsyncSession, query: Select) -> Select:
    """`query` taking its rows' locks where writers need them (`FOR UPDATE`), as is on SQLite."""
    return query if one_writer(session) else query.with_for_update()


def claim(session: AsyncSession, query: Select) -> Select:
    """`query` locking its rows and passing over rows another transaction holds (`FOR UPDATE SKIP
    LOCKED`), so concurrent claimers each take different rows; as is on SQLite (one writer)."""
    return query if one_writer(session) else query.with_for_update(skip_locked=True)


async def lock(session: AsyncSession, query: Select) -> None:
    """Take the locks of `query`'s rows until the transaction ends (nothing to do on SQLite)."""
    if not one_writer(session):
        await session.execute(query.with_for_update())


def writes_in_cte(session: AsyncSession) -> bool:
    """True when an UPDATE may sit inside a WITH (PostgreSQL; SQLite allows only a SELECT there)."""
    return session.bind.dialect.name == "postgresql"


def statements_are_dear(session: AsyncSession) -> bool:
    """True when every statement is a network round trip (PostgreSQL), so one statement that
    also returns what the next would have asked is worth it; on SQLite a statement is a call.

    Not only a matter of cost: SQLAlchemy renders SQLite's RETURNING without table names, so a
    correlated subquery there (`EXISTS (... WHERE webhook_endpoints.workspace_id =
    runs.workspace_id)`) compares the inner table's column with itself (docs/decisions.md,
    "First tokens on time, part thirteen")."""
    return session.bind.dialect.name == "postgresql"
