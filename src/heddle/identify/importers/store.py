"""Writing parsed rows into `identify_directory` and counting what the directory knows.

An import is one transaction: rows are streamed from the parser and written in chunks, bad
rows are counted and kept for the report, and when more rows are bad than the threshold
allows the transaction is rolled back, so the directory holds all of a file or none of it.

Two sources can describe the same code (FedACH and Fedwire both list routing numbers): each
source's rails are kept apart in `extra["rails_by_source"]` and `reachable_rails` is their
union, so importing Fedwire adds `wire` without dropping FedACH's `ach`. The descriptive
fields (name, city, ...) of a row stay those of the source that wrote it first; re-importing
the same source replaces them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from heddle.db.base import Database, utcnow
from heddle.identify.importers.base import BadRow, DirectoryRow, ImportFormatError
from heddle.identify.models import DirectoryEntry

_CHUNK = 2000  # rows per statement; keeps bound parameters under SQLite's and asyncpg's limits
REPORTED_BAD_ROWS = 20  # bad rows listed in the report (all are counted)
_FIELDS = ("name", "type", "bic", "city", "country", "reachable_rails", "extra", "source",
           "imported_at")


@dataclass
class ImportSummary:
    rows: int = 0
    inserted: int = 0
    updated: int = 0
    bad_rows: int = 0
    bad_examples: list[BadRow] = field(default_factory=list)
    rail: str | None = None
    removed: int = 0  # rows of the replaced source that its new file no longer lists


class TooManyBadRows(ImportFormatError):
    """More rows were bad than the threshold allows; nothing was written."""

    def __init__(self, summary: ImportSummary, limit: int):
        self.summary = summary
        self.limit = limit
        super().__init__(0, f"{summary.bad_rows} bad rows (more than the {limit} allowed); "
                            "nothing was written")


async def import_rows(db: Database, parsed: Iterable[DirectoryRow | BadRow], *,
                      max_bad_rows: int, now: dt.datetime | None = None,
                      replace_source: str | None = None) -> ImportSummary:
    """Stream `parsed` into the directory in one transaction (see the module docstring).

    With `replace_source`, that source's rows of the rail that the file no longer lists are
    deleted in the same transaction (a refresh: the publisher's file is the whole list), so the
    old rows answer until the new ones are committed.

    Raises `TooManyBadRows` past `max_bad_rows`, `ImportFormatError` for an unusable file or
    one with no good row; in both cases nothing is written."""
    imported_at = now or utcnow()
    summary = ImportSummary()
    async with db.transaction() as session:
        before: int | None = None
        others = False  # rows of this rail written by another source (then rails merge)
        chunk: list[DirectoryRow] = []
        for item in parsed:
            if isinstance(item, BadRow):
                summary.bad_rows += 1
                if len(summary.bad_examples) < REPORTED_BAD_ROWS:
                    summary.bad_examples.append(item)
                if summary.bad_rows > max_bad_rows:
                    raise TooManyBadRows(summary, max_bad_rows)
                continue
            if summary.rail is None:
                summary.rail = item.rail
                before = await _count(session, item.rail)
                others = await _count(session, item.rail, other_than=item.source) > 0
            elif item.rail != summary.rail:
                raise ImportFormatError(0, "a file holds rows of one rail only")
            chunk.append(item)
            if len(chunk) >= _CHUNK:
                await _write(db, session, chunk, imported_at, merge=others)
                summary.rows += len(chunk)
                chunk = []
        if chunk:
            await _write(db, session, chunk, imported_at, merge=others)
            summary.rows += len(chunk)
        if summary.rows == 0:
            raise ImportFormatError(0, "the file holds no usable rows")
        if replace_source is not None:
            table = DirectoryEntry.__table__
            result = await session.execute(delete(table).where(
                table.c.rail == summary.rail, table.c.source == replace_source,
                table.c.imported_at < imported_at))
            summary.removed = result.rowcount or 0
        summary.inserted = await _count(session, summary.rail) - (before or 0) + summary.removed
    summary.updated = summary.rows - summary.inserted
    return summary


async def upsert_rows(db: Database, rows: Iterable[DirectoryRow], *,
                      now: dt.datetime | None = None) -> ImportSummary:
    """Insert or update every row on (rail, code), all in one transaction."""
    return await import_rows(db, rows, max_bad_rows=0, now=now)


async def _write(db: Database, session, rows: list[DirectoryRow], imported_at: dt.datetime, *,
                 merge: bool) -> None:
    rail = rows[0].rail
    # Reading the chunk's existing rows is needed only when another source wrote some.
    existing = {} if not merge else {
        code: (source, extra or {}, rails or [])
        for code, source, extra, rails in (await session.execute(
            select(DirectoryEntry.code, DirectoryEntry.source, DirectoryEntry.extra,
                   DirectoryEntry.reachable_rails)
            .where(DirectoryEntry.rail == rail,
                   DirectoryEntry.code.in_([r.code for r in rows])))).all()
    }
    fresh, merged = [], []
    for r in rows:
        values = {"rail": r.rail, "code": r.code, "name": r.name, "type": r.type, "bic": r.bic,
                  "city": r.city, "country": r.country, "reachable_rails": list(r.reachable_rails),
                  "extra": dict(r.extra), "source": r.source, "imported_at": imported_at}
        old = existing.get(r.code)
        if old is not None:
            old_source, old_extra, old_rails = old
            by_source = dict(old_extra.get("rails_by_source") or {old_source: list(old_rails)})
            by_source[r.source] = list(r.reachable_rails)
            union = list(dict.fromkeys(rail for rails in by_source.values() for rail in rails))
            if old_source != r.source:
                # Another source wrote this row: keep its description, add this source's rails.
                merged.append({"rail": r.rail, "code": r.code, "reachable_rails": union,
                               "extra": {**old_extra, "rails_by_source": by_source},
                               "imported_at": imported_at})
                continue
            values["reachable_rails"] = union
            if len(by_source) > 1:
                values["extra"]["rails_by_source"] = by_source
        fresh.append(values)
    insert = sqlite.insert if db.is_sqlite else postgresql.insert
    if fresh:
        # Core insert on the table (not the ORM entity): the ORM's bulk path costs more per
        # row than the statement itself.
        statement = insert(DirectoryEntry.__table__)
        statement = statement.on_conflict_do_update(
            index_elements=["rail", "code"],
            set_={column: statement.excluded[column] for column in _FIELDS})
        await session.execute(statement, fresh)
    if merged:
        table = DirectoryEntry.__table__
        statement = (update(table)
                     .where(table.c.rail == bindparam("b_rail"), table.c.code == bindparam("b_code"))
                     .values(reachable_rails=bindparam("b_rails"), extra=bindparam("b_extra"),
                             imported_at=bindparam("b_at")))
        await session.execute(statement, [
            {"b_rail": m["rail"], "b_code": m["code"], "b_rails": m["reachable_rails"],
             "b_extra": m["extra"], "b_at": m["imported_at"]} for m in merged])


async def _count(session, rail: str, *, other_than: str | None = None) -> int:
    query = select(func.count(DirectoryEntry.id)).where(DirectoryEntry.rail == rail)
    if other_than is not None:
        query = query.where(DirectoryEntry.source != other_than)
    return (await session.execute(query)).scalar_one()


async def imported_codes(db: Database) -> dict[str, set[str]]:
    """Codes imported per rail."""
    codes: dict[str, set[str]] = {}
    async with db.streaming_session() as session:
        result = await session.stream(
            select(DirectoryEntry.rail, DirectoryEntry.code).execution_options(yield_per=5000))
        async for rail, code in result:
            codes.setdefault(rail, set()).add(code)
    return codes


async def source_codes(db: Database, source: str) -> set[str]:
    """The codes a source's last import wrote."""
    async with db.session() as session:
        return set((await session.execute(
            select(DirectoryEntry.code).where(DirectoryEntry.source == source))).scalars())


async def imported_sources(db: Database) -> dict[str, dict]:
    """Per imported source: its rows, its data's date (`as_of`: the publisher's date a refresh
    recorded, else the latest import day) and when it was last imported."""
    out: dict[str, dict] = {}
    async with db.streaming_session() as session:
        result = await session.stream(
            select(DirectoryEntry.source, DirectoryEntry.imported_at, DirectoryEntry.extra)
            .execution_options(yield_per=5000))
        async for source, imported_at, extra in result:
            if isinstance(imported_at, str):
                imported_at = dt.datetime.fromisoformat(imported_at)
            as_of = (extra or {}).get("as_of") or imported_at.date().isoformat()
            entry = out.setdefault(source, {"rows": 0, "as_of": as_of, "imported_at": imported_at})
            entry["rows"] += 1
            entry["as_of"] = max(entry["as_of"], as_of)
            entry["imported_at"] = max(entry["imported_at"], imported_at)
    return out
