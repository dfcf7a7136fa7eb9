"""`heddle identify refresh`: download a source from its publisher, check it, import it.

One refresh at a time per database (`refresh_lock`): a second one started meanwhile refuses
(`refresh_running`) rather than importing the same file twice. Checks before anything is
written, each a `RefreshError` (heddle.identify.refresh.download): the download itself (cut,
empty, too large, a zip bomb, the wrong format, the licence notice missing), then the rows:
fewer than half of the last import's, or more than 5% bad. The import is one transaction that
writes the new rows and deletes the source's rows the new file no longer lists, so the old
rows answer until the new ones are committed; a failure leaves them as they were.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url

from heddle.db.base import Database
from heddle.identify.importers.store import import_rows, source_codes
from heddle.identify.refresh import gleif, razorpay_ifsc
from heddle.identify.refresh.download import RefreshError

# Sources whose publisher offers a stable, open download; the others stay `identify import`
# (docs/identify.md, "Refreshing from the publishers", says why for each).
REFRESHABLE = {"gleif": gleif, razorpay_ifsc.SOURCE: razorpay_ifsc}
MIN_SHARE_OF_LAST = 0.5
MAX_BAD_SHARE = 0.05
_LOCK_KEY = 0x4865_6464_6C65  # "Heddle": the advisory lock of identify refreshes (PostgreSQL)


@dataclass
class RefreshReport:
    source: str
    as_of: dt.date
    rows: int
    bad_rows: int
    last_import: int
    dry_run: bool
    notice: str
    inserted: int = 0
    updated: int = 0
    removed: int = 0
    bad_examples: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "as_of": self.as_of.isoformat(), "rows": self.rows,
                "bad_rows": self.bad_rows, "last_import": self.last_import, "dry_run": self.dry_run,
                "inserted": self.inserted, "updated": self.updated, "removed": self.removed,
                "notice": self.notice, "bad_row_examples": self.bad_examples}


def check_rows(rows: int, bad: int, last_import: int) -> None:
    """Refuse a file that lost half the rows of the last import, or whose rows are mostly bad:
    a publisher's file shrinks a little each month, never by half."""
    if last_import and rows < last_import * MIN_SHARE_OF_LAST:
        raise RefreshError("too_few_rows", f"{rows:,} usable rows against {last_import:,} in the last "
                           f"import (less than {MIN_SHARE_OF_LAST:.0%}); nothing was imported")
    if bad > (rows + bad) * MAX_BAD_SHARE:
        raise RefreshError("too_many_bad_rows", f"{bad:,} of {rows + bad:,} rows are bad (more than "
                           f"{MAX_BAD_SHARE:.0%}); nothing was imported")


async def refresh(db: Database, source: str, *, base_url: str | None = None, dry_run: bool = False,
                  client: httpx.AsyncClient | None = None) -> RefreshReport:
    publisher = REFRESHABLE[source]
    async with refresh_lock(db), _client(client) as http:
        got = await publisher.download(http, base_url)
        old = await source_codes(db, source)
        check_rows(len(got.rows), len(got.bad), len(old))
        report = RefreshReport(source, got.as_of, len(got.rows), len(got.bad), len(old), dry_run,
                               got.notice, bad_examples=[b.to_dict() for b in got.bad[:20]])
        new = {row.code for row in got.rows}
        if dry_run:
            report.inserted, report.updated = len(new - old), len(new & old)
            report.removed = len(old - new)
            return report
        summary = await import_rows(db, iter(got.rows), max_bad_rows=0, replace_source=source)
        report.inserted, report.updated, report.removed = summary.inserted, summary.updated, summary.removed
        return report


@contextlib.asynccontextmanager
async def _client(client: httpx.AsyncClient | None) -> AsyncIterator[httpx.AsyncClient]:
    if client is not None:
        yield client
        return
    timeout = httpx.Timeout(60.0, connect=15.0)
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=True,
                                 headers={"User-Agent": "heddle-identify-refresh"}) as own:
        yield own


@contextlib.asynccontextmanager
async def refresh_lock(db: Database) -> AsyncIterator[None]:
    """Held for the whole refresh. PostgreSQL: a session advisory lock (released if the process
    dies with its connection); SQLite: an exclusive lock on a file beside the database."""
    busy = RefreshError("refresh_running", "another `heddle identify refresh` is running on this "
                        "database; nothing was done")
    if not db.is_sqlite:
        async with db.engine.connect() as conn:
            taken = (await conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": _LOCK_KEY})).scalar()
            if not taken:
                raise busy
            try:
                yield
            finally:
                await conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _LOCK_KEY})
        return
    database = make_url(db.url).database
    if not database or database == ":memory:":
        yield  # one process's own database: nothing else can refresh it
        return
    fd = os.open(f"{database}.identify-refresh.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        yield
    finally:
        os.close(fd)  # closing releases the lock
