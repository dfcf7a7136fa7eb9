"""The request log: every /v1 call (method, path, status, latency, workspace, key, run).

Rows are queued by the HTTP middleware and written in batches off the request path, so
logging never adds a database write to a request's latency: one transaction per
`HEDDLE_REQUEST_LOG_FLUSH_SECONDS` (0.5 s) at most, whatever the request rate (at 50 ms, a run
and its polls cost one or two commits of their own on PostgreSQL). A `Service-Run` header is only
kept when that run belongs to the caller's workspace (checked per batch). A run's own built-in
calls (the `identify` tool) are not queued: the step that records the call writes its row in the
same transaction (`insert_rows`), so the run's trace lists it as soon as the run has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, field

from sqlalchemy import String, Uuid, column, insert, select, table
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.db.base import Database, utcnow
from heddle.observability.logging import get_logger
from heddle.observability.metrics import Metrics
from heddle.observability.models import RequestLogEntry

log = get_logger(__name__)
_INSERT = insert(RequestLogEntry.__table__)
# The two columns of loom's `runs` table the attribution check reads, named as a table clause:
# the request log sits below loom and must not import its models (docs/architecture.md,
# "Layers and import contracts"); the column types match heddle.loom.models.Run.
_RUNS = table("runs", column("id", Uuid), column("workspace_id", String))


@dataclass
class LoggedRequest:
    request_id: str
    method: str
    path: str
    status: int
    latency_ms: float
    workspace_id: str | None = None
    key_id: str | None = None
    auth_mode: str | None = None
    run_id: uuid.UUID | None = None
    run_verified: bool = False  # True when the server itself attributed the call (built-in tools)
    created_at: object = field(default_factory=utcnow)


class RequestLogWriter:
    def __init__(self, db: Database, metrics: Metrics, *, max_queue: int = 10_000,
                 batch_size: int = 200, interval: float = 0.05):
        self._db = db
        self._metrics = metrics
        self._queue: asyncio.Queue[LoggedRequest] = asyncio.Queue(max_queue)
        self._batch_size = batch_size
        self._interval = interval
        self._task: asyncio.Task | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._now = asyncio.Event()  # set by flush(): end the gathering wait

    def submit(self, row: LoggedRequest) -> None:
        try:
            self._queue.put_nowait(row)
            self._idle.clear()
        except asyncio.QueueFull:
            self._metrics.request_log_dropped.inc()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="request-log-writer")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        await self._drain()

    async def flush(self) -> None:
        """Wait until everything queued so far is written (tests, shutdown)."""
        self._now.set()  # the writer stops gathering and writes at once
        while not self._queue.empty():
            self._now.set()
            await asyncio.sleep(0.005)
        await self._idle.wait()

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            if not self._now.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._now.wait(), self._interval)
            self._now.clear()
            await self._write([first, *self._take(self._batch_size - 1)])
            if self._queue.empty():
                self._idle.set()

    def _take(self, n: int) -> list[LoggedRequest]:
        rows = []
        while len(rows) < n and not self._queue.empty():
            rows.append(self._queue.get_nowait())
        return rows

    async def _drain(self) -> None:
        while not self._queue.empty():
            await self._write(self._take(self._batch_size))
        self._idle.set()

    async def _write(self, rows: list[LoggedRequest]) -> None:
        if not rows:
            return
        try:
            async with self._db.transaction() as session:
                claimed = {r.run_id for r in rows if r.run_id and not r.run_verified}
                owners: dict[uuid.UUID, str] = {}
                if claimed:
                    result = await session.execute(
                        select(_RUNS.c.id, _RUNS.c.workspace_id).where(_RUNS.c.id.in_(claimed))
                    )
                    owners = dict(result.all())
                await insert_rows(session, rows, owners)
        except Exception:  # never let logging take the service down
            self._metrics.request_log_dropped.inc(len(rows))
            log.exception("request_log_write_failed", rows=len(rows))


async def insert_rows(session: AsyncSession, rows: list[LoggedRequest],
                      owners: dict[uuid.UUID, str] | None = None) -> None:
    """Write `rows` in the caller's transaction. A run named by an unverified row is kept only
    when `owners` says it is the row's workspace's; a built-in tool call's own row (verified)
    is written by the step that records the call, so its run's trace has it at once."""
    values = []
    for r in rows:
        run_id = r.run_id
        if run_id and not r.run_verified and (owners or {}).get(run_id) != r.workspace_id:
            run_id = None  # not this workspace's run: never attribute
        values.append({
            "request_id": r.request_id, "method": r.method, "path": r.path[:500],
            "status": r.status, "latency_ms": round(r.latency_ms, 3),
            "workspace_id": r.workspace_id, "key_id": r.key_id, "auth_mode": r.auth_mode,
            "run_id": run_id, "created_at": r.created_at,
        })
    # One Core executemany: the ORM's unit of work cost more than the insert itself.
    await session.execute(_INSERT, values)
