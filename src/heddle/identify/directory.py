"""The in-memory directory: curated data plus rows imported into `identify_directory`
(GLEIF's BIC-to-LEI rows among them, which join the BIC index).

Lookups never touch the database. `refresh_if_stale` runs a cheap query (row count and latest
`imported_at`) at most every `max_age_s` seconds and re-reads the rows only when it changed,
so `heddle identify import` takes effect on a running server.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from schwifty import registry as schwifty_registry
from sqlalchemy import func, select

from heddle.db.base import Database
from heddle.identify.bics import BicHolder, BicIndex, load_bic_index
from heddle.identify.datasets import CuratedData, load_curated
from heddle.identify.ifsc_branches import BranchList, load_branch_list
from heddle.identify.importers.gleif import SOURCE as GLEIF_SOURCE
from heddle.identify.importers.gleif import mapping_notice
from heddle.identify.models import DirectoryEntry
from heddle.identify.schemas import DataSource, Institution, Rail, Status, Successor
from heddle.observability.logging import get_logger

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class DirectoryRecord:
    """An imported row. `rails_complete` says its rails are exhaustive (per-branch flags), so
    curated bank-level rails must not be added to them."""

    institution: Institution
    rails_complete: bool = False
    note: str | None = None
    branch: str | None = None  # the directory's branch name (IFSC rows)

    def rails_with(self, curated: Institution | None) -> tuple[str, ...]:
        """The row's rails, then the curated institution's, unless the row's are exhaustive."""
        own = self.institution.reachable_rails
        if curated is None or self.rails_complete:
            return own
        return tuple(dict.fromkeys((*own, *curated.reachable_rails)))


def row_source(source: str, imported_at: dt.datetime | str | None, extra: dict) -> DataSource:
    """An imported row's source: the date its publisher gave the file (`extra["as_of"]`, set
    by `heddle identify refresh`), else the day it was imported; GLEIF's BIC-to-LEI rows carry
    the mapping's licence notice."""
    as_of = extra.get("as_of")
    if isinstance(as_of, str):
        day = dt.date.fromisoformat(as_of)
    elif isinstance(imported_at, str):
        day = dt.datetime.fromisoformat(imported_at).date()
    elif imported_at is not None:
        day = imported_at.date()
    else:
        day = dt.date.today()
    notice = mapping_notice(day) if source == GLEIF_SOURCE and extra.get("lei") else None
    return _source(sys.intern(source), day, notice)


@functools.lru_cache(maxsize=256)
def _source(name: str, as_of: dt.date, notice: str | None) -> DataSource:
    return DataSource(name, as_of, notice)  # one object per (source, date): rows share it


def record_from_row(rail: str, code: str, name: str, type_: str, bic: str | None, city: str | None,
                    country: str, rails: list | None, extra: dict | None, source: str = "import",
                    imported_at: dt.datetime | str | None = None) -> DirectoryRecord:
    extra = extra or {}
    status = Status(extra.get("status", "active"))
    successor = None
    if extra.get("successor_lei") or extra.get("successor_name"):
        successor = Successor(extra.get("successor_name"), extra.get("successor_lei"))
    institution = Institution(
        name=sys.intern(name), type=sys.intern(type_), code=code, country=sys.intern(country),
        bic=bic or None, city=sys.intern(city) if city else None,
        reachable_rails=tuple(sys.intern(str(r)) for r in (rails or ())),
        source=row_source(source, imported_at, extra), status=status, successor=successor,
    )
    note = None
    if rail == Rail.ROUTING_NUMBER and extra.get("new_routing_number"):
        note = f"FedACH routes items for this routing number to {extra['new_routing_number']}."
    elif rail == Rail.ROUTING_NUMBER and extra.get("fedglobal"):
        note = ("A FedGlobal entry: ACH items to this routing number go to an institution "
                "outside the US through the Federal Reserve's international ACH service; the "
                "directory does not give its country.")
    branch = extra.get("branch") if isinstance(extra.get("branch"), str) else None
    return DirectoryRecord(institution, bool(extra.get("rails_complete")), note,
                           sys.intern(branch) if branch else None)


class Directory:
    def __init__(self, curated: CuratedData | None = None, *,
                 monotonic: Callable[[], float] = time.monotonic):
        self.curated = curated or load_curated()
        self.bics: BicIndex = load_bic_index(self.curated)
        self.ifsc_branches: BranchList = load_branch_list()
        self._imported: dict[tuple[str, str], DirectoryRecord] = {}
        self._imported_counts: dict[str, int] = {}
        self._signature: tuple[int, dt.datetime | None] | None = None
        self._checked_at: float | None = None
        self._monotonic = monotonic
        self._lock = asyncio.Lock()

    # --- lookups (synchronous, in memory) ---

    def imported(self, rail: Rail, code: str) -> DirectoryRecord | None:
        return self._imported.get((rail.value, code))

    def bic_holder(self, bic: str) -> tuple[BicHolder | None, bool]:
        """The holder of a BIC (8 or 11 characters) from BIC-keyed sources only (see
        heddle.identify.bics), and whether that exact BIC is listed there."""
        return self.bics.holder(bic)

    def warm_up(self) -> None:
        """Load schwifty's bank registries now (about 0.2 s) instead of on the first lookup of
        each country, so no request pays for it."""
        for country in schwifty_registry.get_countries():
            schwifty_registry.get_banks_by_country(country)

    def imported_count(self, rail: Rail) -> int:
        return self._imported_counts.get(rail.value, 0)

    # --- loading imported rows ---

    async def refresh(self, db: Database) -> int:
        """Re-read every imported row; returns how many were loaded."""
        async with self._lock:
            return await self._refresh(db)

    async def refresh_if_stale(self, db: Database, max_age_s: float = 5.0) -> bool:
        """Reload when the table changed since the last load; checks at most every `max_age_s`.

        Returns True when rows were re-read. Concurrent callers do not wait for a refresh in
        progress: they keep answering from the rows already loaded.
        """
        now = self._monotonic()
        if self._checked_at is not None and now - self._checked_at < max_age_s:
            return False
        if self._lock.locked():
            return False
        async with self._lock:
            self._checked_at = self._monotonic()
            signature = await self._table_signature(db)
            if signature == self._signature:
                return False
            await self._refresh(db, signature)
            return True

    async def _table_signature(self, db: Database) -> tuple[int, dt.datetime | None]:
        async with db.session() as session:
            row = (await session.execute(
                select(func.count(DirectoryEntry.id), func.max(DirectoryEntry.imported_at))
            )).one()
        latest = row[1]
        if isinstance(latest, str):  # SQLite aggregates bypass the column type
            latest = dt.datetime.fromisoformat(latest)
        if latest is not None and latest.tzinfo is None:
            latest = latest.replace(tzinfo=dt.UTC)
        return int(row[0]), latest

    async def _refresh(self, db: Database,
                       signature: tuple[int, dt.datetime | None] | None = None) -> int:
        signature = signature or await self._table_signature(db)
        columns = (DirectoryEntry.rail, DirectoryEntry.code, DirectoryEntry.name,
                   DirectoryEntry.type, DirectoryEntry.bic, DirectoryEntry.city,
                   DirectoryEntry.country, DirectoryEntry.reachable_rails, DirectoryEntry.extra,
                   DirectoryEntry.source, DirectoryEntry.imported_at)
        imported: dict[tuple[str, str], DirectoryRecord] = {}
        counts: dict[str, int] = {}
        gleif: list[tuple[Institution, str]] = []  # BIC-keyed rows: GLEIF's BIC-to-LEI file
        async with db.streaming_session() as session:
            result = await session.stream(select(*columns).execution_options(yield_per=5000))
            async for rail, code, *fields in result:
                record = imported[(rail, code)] = record_from_row(rail, code, *fields)
                counts[rail] = counts.get(rail, 0) + 1
                lei = (fields[6] or {}).get("lei")
                if rail == Rail.SWIFT and lei:
                    gleif.append((record.institution, lei))
        # Some seconds of CPU for GLEIF's 20,000-40,000 rows (each name matched against the
        # registry's spellings): in a thread, so the event loop keeps answering meanwhile.
        self.bics = await asyncio.to_thread(load_bic_index, self.curated, gleif)
        self._imported, self._imported_counts, self._signature = imported, counts, signature
        self._checked_at = self._monotonic()
        log.info("identify.directory.refreshed", rows=len(imported))
        return len(imported)
