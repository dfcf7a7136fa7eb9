"""Delivers owed webhooks: claims due deliveries, POSTs them signed, records every attempt.

Durable and at-least-once: a delivery is a row (`outbox.py`) until a 2xx answer marks it
`delivered`. Each attempt first *claims* the row by moving its `next_attempt_at` past the
attempt's longest possible duration (a lease, with a conditional UPDATE, so two processes
never send the same attempt); a process that dies mid-attempt leaves the row to be claimed
again when the lease runs out. A failed attempt is recorded and the delivery rescheduled with
exponential backoff (`backoff()`); after `webhook_retry_hours` (72 h by default, never less
than the 24 h of the contract unless configured) it is given up as `failed`. The event id in
the body is fixed when the delivery is owed, so every retry carries the same `id`. A refused
destination (the SSRF policy, plain http, an unusable URL) is not retried: the delivery fails at
once, its `last_error` saying why.

Every attempt is a span (`webhook {type}`, observability/tracing.py) whose context goes out in
`traceparent`, and counts in `heddle_webhook_deliveries_total{outcome}`; a delivered one adds its
lag since the event to `heddle_webhook_delivery_lag_seconds`.

Calls go through the SSRF-guarded outbound client and are signed exactly like tool calls
(`Service-Signature` over `<t>.POST.<path>.<body digest>`) under the workspace's webhook
secret, looked up at each attempt (a rotated secret or changed URL applies to retries too).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select, update

from heddle.config import Settings
from heddle.db.base import Database, utcnow
from heddle.observability import tracing
from heddle.observability.logging import get_logger
from heddle.observability.metrics import Metrics
from heddle.outbound.exchange import AttemptFailed, encode_json, host_error_message, post_signed
from heddle.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

log = get_logger(__name__)

BATCH = 50
JITTER = 0.2  # up to this fraction of each backoff delay is removed at random


@dataclass(frozen=True)
class Job:
    id: str
    type: str
    body: dict[str, Any]
    attempt: int  # 1-based number of this attempt
    created_at: dt.datetime
    url: str | None
    secret: str | None


def backoff(attempt: int, *, base: float, ceiling: float, rand=random.random) -> float:
    """Seconds before the retry that follows failed attempt number `attempt` (1-based)."""
    delay = min(ceiling, base * 2 ** min(attempt - 1, 40))
    return delay * (1 - JITTER * rand())


class WebhookDispatcher:
    def __init__(self, db: Database, client: httpx.AsyncClient, settings: Settings, *,
                 metrics: Metrics | None = None):
        self.db = db
        self.metrics = metrics
        self.client = client
        self.settings = settings
        # Past this, an attempt has surely ended (the client's total timeout plus slack).
        self.lease = dt.timedelta(seconds=settings.outbound_timeout + 30)
        self._slots = asyncio.Semaphore(settings.webhook_concurrency)
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._inflight: set[asyncio.Task] = set()
        self._stopping = False

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="webhook-dispatcher")

    def wake(self) -> None:
        """Look for due deliveries now (called after a commit that owed one)."""
        self._wake.set()

    async def stop(self, timeout: float = 5.0) -> None:
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await asyncio.wait([self._task], timeout=timeout)
            self._task.cancel()
        if self._inflight:  # an attempt cut short is retried after its lease, by any process
            await asyncio.wait(self._inflight, timeout=timeout)
            for task in self._inflight:
                task.cancel()

    async def _loop(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                jobs = await self.claim()
            except Exception as exc:
                log.warning("webhook_claim_failed", error=type(exc).__name__, detail=str(exc)[:200])
                jobs = []
            for job in jobs:
                await self._slots.acquire()
                task = asyncio.create_task(self._run(job), name=f"webhook-{job.id}")
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
            if len(jobs) < BATCH:
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=self.settings.webhook_poll_seconds)
                except TimeoutError:
                    pass

    async def claim(self, now: dt.datetime | None = None) -> list[Job]:
        """Take the due deliveries (up to BATCH) for one attempt each."""
        now = now or utcnow()
        async with self.db.session() as session:  # a read first: an idle poll takes no write lock
            due = list(await session.scalars(
                select(WebhookDelivery.id).where(WebhookDelivery.state == "pending",
                                                 WebhookDelivery.next_attempt_at <= now)
                .order_by(WebhookDelivery.next_attempt_at).limit(BATCH)))
        if not due:
            return []
        async with self.db.transaction() as session:
            claimed = []
            for delivery_id in due:
                result = await session.execute(
                    update(WebhookDelivery)
                    .where(WebhookDelivery.id == delivery_id, WebhookDelivery.state == "pending",
                           WebhookDelivery.next_attempt_at <= now)
                    .values(next_attempt_at=now + self.lease).execution_options(synchronize_session=False))
                if result.rowcount == 1:  # another process may have claimed it meanwhile
                    claimed.append(delivery_id)
            if not claimed:
                return []
            rows = await session.execute(
                select(WebhookDelivery, WebhookEndpoint.url, WebhookEndpoint.secret)
                .outerjoin(WebhookEndpoint, WebhookEndpoint.workspace_id == WebhookDelivery.workspace_id)
                .where(WebhookDelivery.id.in_(claimed)))
            return [Job(d.id, d.type, d.body, d.attempt_count + 1, d.created_at, url, secret)
                    for d, url, secret in rows]

    async def _run(self, job: Job) -> None:
        try:
            await self.attempt(job)
        except Exception as exc:  # the lease makes it due again; never kill the loop
            log.warning("webhook_attempt_crashed", delivery_id=job.id, error=type(exc).__name__,
                        detail=str(exc)[:200])
        finally:
            self._slots.release()

    async def attempt(self, job: Job) -> bool:
        """POST one claimed delivery and record the attempt; True when delivered."""
        with tracing.span(f"webhook {job.type}", {"heddle.webhook.delivery_id": job.id,
                                                  "heddle.webhook.event_type": job.type,
                                                  "heddle.webhook.attempt": job.attempt}, kind="producer") as span:
            delivered = await self._attempt(job)
            if not delivered:
                span.fail("webhook_attempt_failed")
            return delivered

    async def _attempt(self, job: Job) -> bool:
        started, clock = utcnow(), time.monotonic()
        status, error, final = None, None, False
        if job.url is None or job.secret is None:
            error, final = "the workspace has no webhook URL any more", True
        else:
            try:
                reply = await post_signed(self.client, job.url, body=encode_json(job.body), request_secret=job.secret,
                                          headers={"Content-Type": "application/json", "Service-Event-Id": job.id,
                                                   "Service-Event-Type": job.type})
                status = reply.status
                if not 200 <= status < 300:
                    error = host_error_message(reply)
            except AttemptFailed as exc:
                error = f"{exc.error.code}: {exc.error.message}"[:500]
                # A destination the outbound policy refuses (a private address, plain http) or
                # a URL that cannot be sent to is refused the same way at every retry: the
                # delivery fails now, with the reason, instead of retrying for 72 hours.
                final = not exc.retryable
        await self._record(job, started, round((time.monotonic() - clock) * 1000, 3), status, error, final)
        return error is None

    async def _record(self, job: Job, started: dt.datetime, duration_ms: float, status: int | None,
                      error: str | None, final: bool = False) -> None:
        now = utcnow()
        values: dict[str, Any] = {"attempt_count": job.attempt, "last_error": error}
        if error is None:
            values.update(state="delivered", delivered_at=now, next_attempt_at=None)
        elif final:
            values.update(state="failed", next_attempt_at=None)
        else:
            s = self.settings
            retry_at = now + dt.timedelta(seconds=backoff(job.attempt, base=s.webhook_retry_base_seconds,
                                                          ceiling=s.webhook_retry_max_seconds))
            if retry_at > job.created_at + dt.timedelta(hours=s.webhook_retry_hours):
                values.update(state="failed", next_attempt_at=None)  # given up
            else:
                values.update(next_attempt_at=retry_at)
        async with self.db.transaction() as session:
            session.add(WebhookAttempt(delivery_id=job.id, n=job.attempt, url=job.url or "", started_at=started,
                                       duration_ms=duration_ms, http_status=status, error=error))
            await session.execute(update(WebhookDelivery).where(WebhookDelivery.id == job.id).values(**values)
                                  .execution_options(synchronize_session=False))
        outcome = values.get("state", "retry")
        log.info("webhook_attempt", delivery_id=job.id, event_type=job.type, attempt=job.attempt,
                 http_status=status, outcome=outcome)
        if self.metrics is not None:
            self.metrics.webhook_deliveries.labels(outcome).inc()
            if outcome == "delivered":
                self.metrics.webhook_lag.observe(max(0.0, (now - job.created_at).total_seconds()))
