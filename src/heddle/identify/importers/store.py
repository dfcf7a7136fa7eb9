"""Writing parsed rows into `identify_directory` and counting what the directory knows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite

from heddle.db.base import Database, utcnow
from heddle.identify.importers.base import DirectoryRow
from heddle.identify.models import DirectoryEntry

_CHUNK = 1000  # rows per INSERT; keeps bound parameters under SQLite's and asyncpg's limits


@dataclass(frozen=True)
class ImportSummary:
    rows: int
    inserted: int
    updated: int


async def upsert_rows(db: Database, rows: Sequence[DirectoryRow], *,
                      now: dt.datetime | None = None) -> ImportSummary:
    """Insert or update every row on (rail, code), all in one transaction."""
    imported_at = now or utcnow()
    insert = sqlite.insert if db.is_sqlite else postgresql.insert
    rails = sorted({row.rail for row in rows})
    async with db.transaction() as session:
        before = await _count(session, rails)
        for start in range(0, len(rows), _CHUNK):
            values = [
                {"rail": r.rail, "code": r.code, "name": r.name, "type": r.type, "bic": r.bic,
                 "city": r.city, "country": r.country, "reachable_rails": list(r.reachable_rails),
                 "extra": dict(r.extra), "source": r.source, "imported_at": imported_at}
                for r in rows[start:start + _CHUNK]
            ]
            statement = insert(DirectoryEntry).values(values)
            statement = statement.on_conflict_do_update(
                index_elements=[DirectoryEntry.rail, DirectoryEntry.code],
                set_={column: statement.excluded[column]
                      for column in ("name", "type", "bic", "city", "country", "reachable_rails",
                                     "extra", "source", "imported_at")},
            )
            await session.execute(statement)
        after = await _count(session, rails)
    inserted = after - before
    return ImportSummary(rows=len(rows), inserted=inserted, updated=len(rows) - inserted)


async def _count(session, rails: list[str]) -> int:
    return (await session.execute(
        select(func.count(DirectoryEntry.id)).where(DirectoryEntry.rail.in_(rails))
    )).scalar_one()


async def imported_codes(db: Database) -> dict[str, set[str]]:
    """Codes imported per rail."""
    codes: dict[str, set[str]] = {}
    async with db.session() as session:
        result = await session.stream(
            select(DirectoryEntry.rail, DirectoryEntry.code).execution_options(yield_per=5000))
        async for rail, code in result:
            codes.setdefault(rail, set()).add(code)
    return codes
