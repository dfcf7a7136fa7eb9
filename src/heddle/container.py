"""The shared services of one process, typed, and how to build and close them.

`heddle serve` (through the FastAPI lifespan in `heddle.lifespan`) and `heddle worker` build the
same `Container`; nothing here imports FastAPI. Lower layers never receive the container: the
tool kinds get `IdentifyCharging` and `ToolHostAccess`, Identify's HTTP route gets
`identify_charging`, and so on, so each layer's dependencies are visible in its signature.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal, Protocol

import httpx

from heddle.auth.direct import DirectAuthenticator
from heddle.auth.jwks import JwksCache
from heddle.config import Settings
from heddle.db.base import Database, is_sqlite
from heddle.idempotency.pruner import IdempotencyPruner
from heddle.identify.charging import IdentifyCharging
from heddle.identify.service import IdentifyService
from heddle.loom.arrival_order import ArrivalOrder
from heddle.loom.channels import EventSink
from heddle.loom.delta_writer import DeltaWriter
from heddle.loom.engine import RunEngine
from heddle.loom.event_signals import RunEventSignals
from heddle.loom.memory import Caps as MemoryCaps
from heddle.loom.providers.registry import ModelRegistry
from heddle.loom.retention import RetentionPruner
from heddle.loom.run_event import sent_by_database
from heddle.loom.schedule_firing import SchedulePoller
from heddle.loom.schedules import Caps
from heddle.loom.tools import ToolKinds
from heddle.loom.tools.client import ClientTool
from heddle.loom.tools.hosted import HostedTool, ToolHostAccess
from heddle.loom.tools.identify import IdentifyTool
from heddle.loom.tools.mcp import McpServers, McpTool
from heddle.loom.tools.memory import MemoryTools
from heddle.loom.tools.schedule import ScheduleTool
from heddle.loom.unit_of_work import RunSubmitter, RunUnitOfWork, publish_to
from heddle.observability.logging import get_logger
from heddle.observability.metrics import Metrics
from heddle.observability.request_log import RequestLogWriter
from heddle.observability.retention import RequestLogPruner
from heddle.outbound.mcp import McpClient
from heddle.outbound.mcp_limits import McpLimits
from heddle.outbound.token_cache import SubjectTokenCache
from heddle.ratelimit.limiter import RateLimiter
from heddle.realtime.bus import BusPublisher, database_settings
from heddle.realtime.setup import Realtime
from heddle.webhooks.dispatcher import WebhookDispatcher

log = get_logger(__name__)

Role = Literal["serve", "worker", "eval"]  # eval: `heddle eval run`, which executes its own cases


class RunExecutor(RunSubmitter, Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Container:
    settings: Settings
    role: Role
    metrics: Metrics
    db: Database
    realtime: Realtime
    events: EventSink | None  # the realtime publisher (to the hub, a shared bus or hosted Pusher)
    request_log: RequestLogWriter
    request_log_pruner: RequestLogPruner  # request-log retention, in the background
    idempotency_pruner: IdempotencyPruner  # Idempotency-Key rows older than their TTL
    rate_limiter: RateLimiter
    retention_pruner: RetentionPruner | None  # workspaces' retention_days; API processes only
    outbound: httpx.AsyncClient  # SSRF-guarded: tool hosts, mint URLs, JWKS URIs, name providers
    jwks: JwksCache
    direct_auth: DirectAuthenticator
    subject_tokens: SubjectTokenCache
    identify: IdentifyService
    identify_charging: IdentifyCharging
    hosted_tools: ToolHostAccess
    registry: ModelRegistry
    run_events: DeltaWriter  # a reply's deltas stored while it streams; `.signals` wakes SSE streams
    uow: RunUnitOfWork  # every run and tool-call write, and its after-commit hooks
    webhooks: WebhookDispatcher | None  # None when HEDDLE_WEBHOOK_DISPATCHER is off
    engine: RunEngine
    executor: RunExecutor | None  # where `RunWork.start` sends runs; None in a worker
    loop: asyncio.AbstractEventLoop
    message_order: ArrivalOrder  # new messages on their way to the model, in order (loom/arrival_order.py)
    # Fires due schedules (loom/schedule_firing.py) where runs execute: `serve` embedded, `worker` in queue mode.
    schedule_poller: SchedulePoller | None = None

    def database(self) -> Database:
        return self.db

    async def aclose(self) -> None:
        """Stop in the reverse order of `build_container`."""
        if self.schedule_poller is not None:
            await self.schedule_poller.stop()
        if self.retention_pruner is not None:
            await self.retention_pruner.stop()
        if self.executor is not None:
            await self.executor.stop()
        if self.webhooks is not None:
            await self.webhooks.stop()
        await self.registry.aclose()
        await self.idempotency_pruner.stop()
        await self.request_log_pruner.stop()
        await self.realtime.aclose()
        await self.jwks.aclose()
        await self.outbound.aclose()
        await self.request_log.stop()
        await self.db.dispose()


async def build_container(settings: Settings, *, role: Role = "serve", metrics: Metrics | None = None,
                          realtime: Realtime | None = None) -> Container:
    """Open the database (migrating if configured), start the background writers and the
    executor. `realtime` is passed in by the app, whose routes need the hub before start-up."""
    from heddle.auth.session_tokens import SessionTokenVerifier
    from heddle.db.migrate import upgrade
    from heddle.identify.service import build_identify_service
    from heddle.loom.executor import InProcessExecutor
    from heddle.money import to_micro
    from heddle.outbound.safe_http import build_outbound_client

    s = settings
    metrics = metrics or Metrics()
    realtime = realtime or Realtime(settings, serve_sockets=role == "serve")
    queue_mode = s.executor == "queue"
    if queue_mode:
        from heddle.queue.enqueue import QueueSubmitter, queue_engine_kwargs
    # In queue mode every connection says so: the database then enqueues the job of each run
    # it creates or resumes, in that same transaction (heddle/queue/enqueue.py).
    engine_kwargs = queue_engine_kwargs() if queue_mode else {}
    # The PostgreSQL bus carries this process's events (built-in realtime server, shared bus).
    bus_settings = (database_settings(s.event_bus, s.event_bus_channel)
                    if isinstance(realtime.publisher, BusPublisher) else {})
    if not is_sqlite(s.database_url):
        engine_kwargs |= {"pool_size": s.db_pool_size, "max_overflow": s.db_max_overflow}
        # pg_stat_activity (and the per-process cost figures in docs/operations.md) tell the
        # processes apart by application_name.
        server_settings = engine_kwargs.setdefault("connect_args", {}).setdefault("server_settings", {})
        server_settings["application_name"] = f"heddle-{role}"
        # On the PostgreSQL bus, the transaction that stores a run event also sends it (0010).
        server_settings |= bus_settings
    db = Database(s.database_url, **engine_kwargs)
    if s.migrate_on_start:
        await upgrade(s.database_url, engine=db.engine)
    await realtime.start()  # subscribed to the shared bus (if any) before any run can publish
    request_log = RequestLogWriter(db, metrics, interval=s.request_log_flush_seconds)
    await request_log.start()
    request_log_pruner = RequestLogPruner(db, retention_days=s.request_log_retention_days,
                                          interval=s.request_log_prune_interval)
    await request_log_pruner.start()
    idempotency_pruner = IdempotencyPruner(db, ttl_hours=s.idempotency_ttl_hours,
                                           interval_s=s.idempotency_prune_interval_s)
    idempotency_pruner.start()
    rate_limiter = RateLimiter(per_key=s.rate_limit_per_key, per_subject=s.rate_limit_per_subject,
                               storage_uri=s.rate_limit_storage, auth_failures=s.rate_limit_auth_failures)
    outbound = build_outbound_client(
        allow_private=s.allow_private_outbound, connect_timeout=s.outbound_connect_timeout,
        timeout=s.outbound_timeout, max_response_bytes=s.outbound_max_response_bytes)
    jwks = JwksCache(outbound, ttl=s.jwks_cache_ttl, min_refresh_interval=s.jwks_refresh_min_interval,
                    fetch_timeout=s.jwks_fetch_timeout)
    direct_auth = DirectAuthenticator(db, SessionTokenVerifier(
        None, jwks, verified_cache_size=s.session_token_cache_size))
    subject_tokens = SubjectTokenCache()
    # Holder-name providers are called through the SSRF-guarded client too.
    identify = build_identify_service(s, outbound, db=db)
    charging = IdentifyCharging(db, identify, metrics, to_micro(s.identify_price_credits))
    hosted = ToolHostAccess(db, outbound, subject_tokens, to_micro(s.tool_call_price_credits),
                            public_url=s.console_base_url(), attachment_url_seconds=s.attachment_url_seconds)
    registry = ModelRegistry.from_json(s.model_classes, metrics=metrics)
    events = realtime.publisher
    metrics.watch_realtime(events)
    if bus_settings:
        events.sent_by_database = sent_by_database
    signals = RunEventSignals()
    run_events = DeltaWriter(db, signals)
    if realtime.relay is not None:
        # Another process's run events reach this one's SSE streams as soon as the shared bus
        # carries them, not at their next poll: with their seq (PostgreSQL) as the events
        # themselves, sent without a read when they follow a stream's cursor; else as a wake-up.
        realtime.relay.log_observers.append(signals.wake)
    # What happens after a run's change commits, in this order: this process's SSE streams and
    # webhook dispatcher wake up, the events go to realtime, the runs made runnable are submitted.
    uow = RunUnitOfWork(db)
    uow.number_for(signals.watched)  # events a stream of this process follows come back numbered
    uow.on_commit(signals.committed, deferrable=False)
    if events is not None:
        uow.on_commit(publish_to(uow, events))
    # The tool kinds runs can call (heddle/loom/tools/): a new kind is one more entry here.
    # MCP first: an expanded `mcp:` entry has a name, which the hosted kind would claim too.
    mcp = McpServers(hosted, McpClient(outbound, ttl=s.mcp_tools_ttl_seconds, limits=McpLimits.from_settings(s),
                                       metrics=metrics))
    caps = Caps(per_thread=s.schedules_max_per_thread, per_subject=s.schedules_max_per_subject)
    tools = ToolKinds(IdentifyTool(charging, request_log), ScheduleTool(db, caps), McpTool(mcp, uow),
                      HostedTool(hosted, uow), MemoryTools(db, MemoryCaps.of(s)), ClientTool(),
                      max_tools=s.tools_max_per_turn, max_schema_bytes=s.tools_max_schema_bytes, metrics=metrics)
    engine = RunEngine(db, s, registry, tools, lambda: events, metrics, deltas=run_events, uow=uow)
    webhooks: WebhookDispatcher | None = None
    if s.webhook_dispatcher:  # every process may run one: deliveries are claimed under a lease
        webhooks = WebhookDispatcher(db, outbound, s, metrics=metrics)
        signals.listeners.append(webhooks.wake)  # a committed run change may owe one
    executor: RunExecutor | None = None
    if queue_mode:
        executor = QueueSubmitter() if role in ("serve", "eval") else None
    elif role in ("serve", "eval"):
        # An eval never reclaims the runs a server on the same SQLite file is executing.
        executor = InProcessExecutor(db, engine, metrics, concurrency=s.run_concurrency,
                                     lease_seconds=s.run_lease_seconds, sweep_interval=s.run_sweep_seconds,
                                     reclaim_all_on_start=db.is_sqlite and role == "serve")
    if executor is not None:
        uow.submit_to(executor)  # new runs, resumed runs and a thread's next queued run start here
    retention_pruner: RetentionPruner | None = None
    if role == "serve":
        retention_pruner = RetentionPruner(db, s.retention_sweep_seconds, uow)
    # Schedules fire where runs execute; every such process may poll (claims skip each other's rows).
    schedule_poller = (SchedulePoller(db, uow, s.schedule_poll_seconds, s.schedule_batch)
                       if (role == "worker") == queue_mode else None)
    container = Container(
        settings=s, role=role, metrics=metrics, db=db, realtime=realtime, events=events,
        request_log=request_log, request_log_pruner=request_log_pruner,
        idempotency_pruner=idempotency_pruner, rate_limiter=rate_limiter, retention_pruner=retention_pruner,
        outbound=outbound, jwks=jwks,
        direct_auth=direct_auth,
        subject_tokens=subject_tokens, identify=identify, identify_charging=charging, hosted_tools=hosted,
        registry=registry, run_events=run_events, uow=uow, webhooks=webhooks, engine=engine, executor=executor,
        loop=asyncio.get_running_loop(), message_order=ArrivalOrder(), schedule_poller=schedule_poller)
    if retention_pruner is not None:
        retention_pruner.start()
    if webhooks is not None:
        await webhooks.start()
    if executor is not None:
        await executor.start()
    if schedule_poller is not None:
        schedule_poller.start()
    log.info("heddle_started", role=role, database=db.engine.url.render_as_string(hide_password=True))
    return container
