"""Declarative base, column types shared by every domain, and the async engine/session."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

from heddle.db.sqlite_inline import INLINE_BUSY_TIMEOUT_MS, inline_creator

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on both SQLite (which drops tzinfo) and PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime stored; use heddle.db.base.utcnow()")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def _inline_file(url: str) -> str | None:
    """The SQLite file `url` names when it runs on the event loop (heddle/db/sqlite_inline.py)."""
    if not is_sqlite(url):
        return None
    database = make_url(url).database
    return database if database and database != ":memory:" and not database.startswith("file:") else None


def is_inline_sqlite(url: str) -> bool:
    """A SQLite file, run on the event loop (heddle/db/sqlite_inline.py)."""
    return _inline_file(url) is not None


def create_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An async engine; SQLite gets WAL, a busy timeout and foreign keys."""
    if is_sqlite(url):
        database = _inline_file(url)
        inline = database is not None
        if inline:  # the usual case: a file; see heddle/db/sqlite_inline.py for why
            # A connection is held by every request and run step in flight (a write one also
            # while it waits for the writer lock), so a busy server has dozens at once. The
            # default pool (5 + 10 overflow) opened and closed one per checkout beyond five, each
            # a new SQLite connection with its PRAGMAs; these stay open (memory: SQLite's page
            # cache, up to 2 MB a connection).
            kwargs.setdefault("pool_size", 32)
            kwargs.setdefault("max_overflow", 96)
            engine = create_async_engine(url, async_creator=inline_creator(database), **kwargs)
        else:
            engine = create_async_engine(url, connect_args={"timeout": 30}, **kwargs)
        busy_timeout_ms = INLINE_BUSY_TIMEOUT_MS if inline else 30000

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
            # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own is deferred).
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            cur.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _sqlite_begin(conn):  # pragma: no cover - trivial
            # Write transactions take the write lock at BEGIN, so a read-then-write never fails
            # with SQLITE_BUSY on lock upgrade (SQLite serialises writers anyway). Reads begin
            # deferred and never wait for a writer (WAL).
            immediate = conn.get_execution_options().get("sqlite_write", False)
            # On the DBAPI cursor: `exec_driver_sql` would build a whole execution context
            # and result for a statement that returns nothing (measurably slower per request).
            cursor = conn.connection.dbapi_connection.cursor()
            try:
                cursor.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            finally:
                cursor.close()

        return engine
    # As the service's settings (heddle/config.py): kept connections, no overflow churn.
    kwargs.setdefault("pool_size", 30)
    kwargs.setdefault("max_overflow", 0)
    engine = create_async_engine(url, **kwargs)
    _ping_when_idle(engine)
    return engine


# A pooled PostgreSQL connection idle longer than this is pinged before it is handed out.
PING_AFTER_IDLE_SECONDS = 10.0


def _ping_when_idle(engine: AsyncEngine) -> None:
    """Check a pooled connection only when it sat idle (SQLAlchemy's "pessimistic disconnect
    handling" recipe with a custom check).

    `pool_pre_ping` pinged on every checkout: a round trip and a transaction (BEGIN, `;`,
    ROLLBACK) for each of the 10-15 sessions of a run, about a fifth of the statements the
    database served per run. A connection returned moments ago is as alive as a ping would
    show; one idle for `PING_AFTER_IDLE_SECONDS` (that a restart, a proxy or a firewall may have
    dropped) is still pinged, and a dead one replaced before use (DisconnectionError makes the
    pool retry with a new connection).
    """
    @event.listens_for(engine.sync_engine, "checkin")
    def _returned(_dbapi_conn, record) -> None:
        record.info["heddle_returned_at"] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _checkout(dbapi_conn, record, _proxy) -> None:
        returned = record.info.get("heddle_returned_at")
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE_SECONDS:
            return  # new (just connected) or recently used
        try:
            dbapi_conn.ping()
        except Exception as exc:
            raise DisconnectionError(f"pooled connection failed its ping: {type(exc).__name__}") from exc


class Database:
    """Owns the engine and hands out sessions; one per process."""

    def __init__(self, url: str, **engine_kwargs: Any):
        self.url = url
        self.engine = create_engine(url, **engine_kwargs)
        # Inline SQLite (heddle/db/sqlite_inline.py): ending a session never waits on I/O.
        self.inline = is_inline_sqlite(url)
        # Reads on PostgreSQL run without a transaction of their own (autocommit): under READ
        # COMMITTED, PostgreSQL's default and ours, every statement of a transaction takes its
        # own snapshot anyway, so BEGIN and ROLLBACK around a read bought no consistency, only
        # two round trips (half the statements of a poll). SQLite keeps its read transactions:
        # there they are one snapshot (WAL), and cost no round trip.
        reads = self.engine if is_sqlite(url) else self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self.sessionmaker = async_sessionmaker(reads, expire_on_commit=False)
        self.cursor_sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)
        self.write_sessionmaker = async_sessionmaker(
            self.engine.execution_options(sqlite_write=True), expire_on_commit=False)

    @property
    def is_sqlite(self) -> bool:
        return is_sqlite(self.url)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session for reads: on PostgreSQL each statement commits on its own (nothing a read
        session writes is ever rolled back: write through `transaction` or `write_session`); on
        SQLite its transactions begin deferred."""
        # Closing a session that never began a transaction (SQLite inline, or PostgreSQL reads
        # in autocommit) never waits on the network: it is closed directly (see `_closing`).
        async with self._closing(self.sessionmaker(), closes_at_once=True) as session:
            yield session

    @asynccontextmanager
    async def write_session(self) -> AsyncIterator[AsyncSession]:
        """A session that will write; the caller commits (SQLite: BEGIN IMMEDIATE)."""
        async with self._closing(self.write_sessionmaker()) as session:
            yield session

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A write session inside one transaction: committed on exit, rolled back on error."""
        async with self._closing(self.write_sessionmaker()) as session, session.begin():
            yield session

    @asynccontextmanager
    async def streaming_session(self) -> AsyncIterator[AsyncSession]:
        """A read session inside a transaction (rolled back at the end), for `session.stream()`:
        a server-side cursor lives in a transaction on PostgreSQL."""
        async with self._closing(self.cursor_sessionmaker()) as session:
            yield session

    @asynccontextmanager
    async def single_statement(self) -> AsyncIterator[AsyncSession]:
        """A session for one write statement, atomic by itself: on PostgreSQL it commits on its
        own (no BEGIN and COMMIT round trips around it); on SQLite a write transaction."""
        if self.is_sqlite:
            async with self.transaction() as session:
                yield session
        else:
            async with self.session() as session:
                yield session

    @asynccontextmanager
    async def _closing(self, session: AsyncSession, *, closes_at_once: bool = False) -> AsyncIterator[AsyncSession]:
        """`session`, closed on exit.

        SQLAlchemy's own exit closes a session in a task of its own, shielded, so that a
        cancellation cannot abandon a close that waits on the network (asyncpg). That costs a
        task and two more turns of the event loop for every session. An inline SQLite session's
        close never waits (its rollback and pool return are plain calls, nothing in them
        yields), so no cancellation can land inside it: it is closed directly. So is a PostgreSQL
        read session's (`closes_at_once`): in autocommit it has no transaction to roll back, and
        its pool return sends nothing.
        """
        if not (self.inline or (closes_at_once and not self.is_sqlite)):
            async with session:
                yield session
            return
        try:
            yield session
        finally:
            await session.close()

    async def dispose(self) -> None:
        await self.engine.dispose()
