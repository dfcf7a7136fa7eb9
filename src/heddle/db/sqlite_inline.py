"""SQLite for SQLAlchemy's asyncio engine, run on the event loop instead of a helper thread.

aiosqlite runs every call on a per-connection thread; SQLAlchemy's adapter makes about four
such calls per statement (cursor, execute, fetchall, close), each a thread hand-off and an
event-loop wake-up. On a small VM that is 0.1-0.2 ms a hand-off, while the statements Heddle
runs against a local WAL file take microseconds. So the embedded mode plugs this connection
into SQLAlchemy's aiosqlite dialect (through `async_creator`) and runs the calls inline.

Running inline is only safe if no statement waits for SQLite's write lock while the event loop
is blocked: a writer of this process waiting in SQLite's busy handler would stall the very
task that holds the lock. So writers of one process serialise on an asyncio lock first (taken
at `BEGIN IMMEDIATE`, or at the first write of any other transaction, and released at commit
or rollback), and only other processes (the CLI, a second server) can make SQLite itself
wait. That wait is short and bounded: `BEGIN IMMEDIATE` is retried with asyncio sleeps
(nothing has happened yet, so a retry is safe) until the configured timeout; any other lock
wait gets SQLite's busy handler with a short timeout, then `database is locked`.

See docs/decisions.md ("SQLite inline driver").
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

# How long one statement may block the event loop waiting for another process's write lock.
INLINE_BUSY_TIMEOUT_MS = 50
_WRITE_PREFIXES = ("insert", "update", "delete", "replace", "create", "drop", "alter", "with")


def _keyword(sql: str) -> str:
    return sql.lstrip()[:16].lower()


def _is_write(sql: str) -> bool:
    head = _keyword(sql)
    # `with` may be a read (a CTE select); treating it as a write only costs taking the lock.
    return head.startswith(_WRITE_PREFIXES)


class WriterLock:
    """One asyncio lock per event loop, shared by every connection to one database file."""

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    def for_loop(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock


class InlineCursor:
    """The subset of `aiosqlite.Cursor` that SQLAlchemy's adapter uses."""

    def __init__(self, connection: InlineConnection):
        self._connection = connection
        self._cursor = connection._conn.cursor()

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def execute(self, sql: str, parameters: Sequence[Any] | dict | None = None) -> InlineCursor:
        if parameters is None:
            await self._connection._run(sql, self._cursor.execute, sql)
        else:
            await self._connection._run(sql, self._cursor.execute, sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Any]) -> InlineCursor:
        await self._connection._run(sql, self._cursor.executemany, sql, parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(size if size is not None else self._cursor.arraysize)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def nextset(self) -> None:
        return None

    async def setinputsizes(self, *sizes: Any) -> None:
        return None

    async def close(self) -> None:
        self._cursor.close()

    @property
    def description(self):
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value


class _InlineQueue:
    """Stands in for aiosqlite's request queue, which SQLAlchemy's adapter uses directly to set
    `isolation_level`: run the function now and resolve its future."""

    def __init__(self, connection: InlineConnection):
        self._connection = connection

    def put_nowait(self, item: tuple[asyncio.Future, Callable[[], Any]]) -> None:
        future, function = item
        try:
            future.set_result(function())
        except Exception as exc:  # pragma: no cover - passed through to SQLAlchemy
            future.set_exception(exc)


class InlineConnection:
    """The subset of `aiosqlite.Connection` that SQLAlchemy's adapter uses."""

    def __init__(self, conn: sqlite3.Connection, writer: WriterLock, lock_timeout: float):
        self._conn = conn
        self._connection: sqlite3.Connection | None = conn  # checked by SQLAlchemy's adapter
        self._tx = _InlineQueue(self)
        self._writer = writer
        self._lock_timeout = lock_timeout
        self._held: asyncio.Lock | None = None

    # -- the writer lock ------------------------------------------------------------------

    async def _acquire(self) -> None:
        if self._held is not None:
            return
        lock = self._writer.for_loop()
        if not lock.locked() and not getattr(lock, "_waiters", None):
            # Uncontended (the usual case): `acquire()` returns without suspending. `wait_for`
            # would wrap it in a new task and cost an event-loop round trip per transaction,
            # putting every write behind all the callbacks queued meanwhile.
            await lock.acquire()
            self._held = lock
            return
        try:
            await asyncio.wait_for(lock.acquire(), timeout=self._lock_timeout)
        except TimeoutError:
            raise sqlite3.OperationalError("database is locked (waited for this process's writer)") from None
        self._held = lock

    def _release(self) -> None:
        if self._held is not None and not self._conn.in_transaction:
            held, self._held = self._held, None
            held.release()

    async def _run(self, sql: str, call: Callable[..., Any], *args: Any) -> None:
        """Run one statement, first taking this process's writer lock if it will write."""
        head = _keyword(sql)
        if head.startswith(("begin immediate", "begin exclusive")):
            await self._acquire()
            await self._begin_immediate(call, *args)
            return
        if self._held is None and _is_write(sql):
            await self._acquire()
        try:
            call(*args)
        finally:
            self._release()  # an autocommit write (no transaction open) is done: next writer

    async def _begin_immediate(self, call: Callable[..., Any], *args: Any) -> None:
        """Take SQLite's write lock, sleeping (not blocking the loop) while another process has it."""
        deadline = time.monotonic() + self._lock_timeout
        delay = 0.001
        self._conn.execute("PRAGMA busy_timeout=0")  # fail at once, then sleep on the loop
        try:
            while True:
                try:
                    call(*args)
                    return
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() >= deadline:
                        self._release_unconditionally()
                        raise
                except BaseException:
                    self._release_unconditionally()
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
        finally:
            self._conn.execute(f"PRAGMA busy_timeout={INLINE_BUSY_TIMEOUT_MS}")

    def _release_unconditionally(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            held.release()

    # -- the aiosqlite surface ------------------------------------------------------------

    def cursor(self) -> InlineCursor:
        return InlineCursor(self)

    async def commit(self) -> None:
        try:
            self._conn.commit()
        finally:
            self._release()

    async def rollback(self) -> None:
        try:
            self._conn.rollback()
        finally:
            self._release()

    async def close(self) -> None:
        if self._connection is None:
            return
        try:
            self._conn.close()
        finally:
            self._connection = None
            self._release_unconditionally()

    def stop(self) -> None:
        """Force-close (SQLAlchemy's terminate)."""
        if self._connection is not None:
            self._conn.close()
            self._connection = None
        self._release_unconditionally()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level


def inline_creator(path: str, *, lock_timeout: float = 30.0, uri: bool = False) -> Callable[[], Any]:
    """An `async_creator` for `create_async_engine`: inline connections to the file at `path`."""
    writer = WriterLock()

    async def connect() -> InlineConnection:
        conn = sqlite3.connect(path, timeout=INLINE_BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False, uri=uri)
        return InlineConnection(conn, writer, lock_timeout)

    return connect
