"""One object per process holding what the request handlers and the run engine share.

Built by `create_app` and started/stopped by the app's lifespan; handlers reach it through
`heddle.api.deps.services(request)`.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

from fastapi import FastAPI

from heddle.config import Settings
from heddle.db.base import Database
from heddle.db.migrate import upgrade
from heddle.observability.logging import get_logger
from heddle.observability.metrics import Metrics
from heddle.observability.request_log import RequestLogWriter

log = get_logger(__name__)


class Services:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.metrics = Metrics()
        self.db: Database | None = None
        self.request_log: RequestLogWriter | None = None
        self.started = False
        self.registry = None  # model classes (heddle.loom.providers.registry)
        self.engine = None
        self.executor = None
        self.pruner = None  # heddle.loom.retention.RetentionPruner
        from heddle.realtime.setup import Realtime

        self.realtime = Realtime(settings)
        self.events = self.realtime.publisher  # EventSink, or None when realtime is off
        self.direct_auth = None  # async (request, token, session) -> AuthContext
        self.outbound = None  # httpx.AsyncClient, SSRF-guarded
        self.identify = None  # heddle.identify.service.IdentifyService
        self.jwks = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sqlite_lock: str | None = None  # heddle.db.sqlite_owner

    def database(self) -> Database:
        if self.db is None:
            raise RuntimeError("services not started")
        return self.db

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        from heddle.db import sqlite_owner

        # Before anything touches the file: a second server on it refuses to start.
        self.sqlite_lock = sqlite_owner.hold(self.settings.database_url)
        self.db = Database(self.settings.database_url)
        if self.settings.migrate_on_start:
            await upgrade(self.settings.database_url, engine=self.db.engine)
        self.request_log = RequestLogWriter(self.db, self.metrics)
        await self.request_log.start()
        self._start_outbound()
        self._start_identify()
        await self._start_loom()
        self.started = True
        log.info("heddle_started", database=self.db.engine.url.render_as_string(hide_password=True))

    def _start_outbound(self) -> None:
        """The SSRF-guarded HTTP client for tool hosts, mint URLs and JWKS URIs; direct auth."""
        from heddle.auth.direct import DirectAuthenticator
        from heddle.auth.jwks import JwksCache
        from heddle.auth.session_tokens import SessionTokenVerifier
        from heddle.outbound.safe_http import build_outbound_client
        from heddle.outbound.token_cache import SubjectTokenCache

        s = self.settings
        self.outbound = build_outbound_client(
            allow_private=s.allow_private_outbound, connect_timeout=s.outbound_connect_timeout,
            timeout=s.outbound_timeout, max_response_bytes=s.outbound_max_response_bytes)
        self.jwks = JwksCache(self.outbound, ttl=s.jwks_cache_ttl, min_refresh_interval=s.jwks_refresh_min_interval)
        self.direct_auth = DirectAuthenticator(self.db, SessionTokenVerifier(
            None, self.jwks, verified_cache_size=s.session_token_cache_size))
        self.subject_tokens = SubjectTokenCache()

    def _start_identify(self) -> None:
        from heddle.identify.service import build_identify_service

        # Holder-name providers are called through the SSRF-guarded client too.
        self.identify = build_identify_service(self.settings, self.outbound, db=self.db)

    async def _start_loom(self) -> None:
        from heddle.loom.engine import RunEngine
        from heddle.loom.executor import InProcessExecutor
        from heddle.loom.providers.registry import ModelRegistry
        from heddle.loom.tool_runner import DefaultToolRunner

        self.registry = ModelRegistry.from_json(self.settings.model_classes)
        self.engine = RunEngine(self.db, self.settings, self.registry, DefaultToolRunner(self),
                                lambda: self.events, self.metrics)
        self.executor = InProcessExecutor(self.db, self.engine, self.metrics,
                                          concurrency=self.settings.run_concurrency,
                                          lease_seconds=self.settings.run_lease_seconds,
                                          sweep_interval=self.settings.run_sweep_seconds,
                                          reclaim_all_on_start=self.db.is_sqlite)
        self.engine.submitter = self.executor  # the next queued run of a thread starts through it
        from heddle.loom.retention import RetentionPruner

        async def publish(effects, realtime_enabled):
            await effects.apply(self.events, self.executor, realtime_enabled)

        self.pruner = RetentionPruner(self.db, self.settings.retention_sweep_seconds, publish)
        self.pruner.start()
        await self.executor.start()

    async def stop(self) -> None:
        if self.pruner is not None:
            await self.pruner.stop()
        if self.executor:
            await self.executor.stop()
        if self.registry:
            await self.registry.aclose()
        if self.events is not None:
            await self.events.aclose()
        if self.realtime.hub is not None:
            await self.realtime.hub.aclose()
        if self.outbound is not None:
            await self.jwks.aclose()
            await self.outbound.aclose()
        if self.request_log:
            await self.request_log.stop()
        if self.db:
            await self.db.dispose()
        from heddle.db import sqlite_owner

        sqlite_owner.release(self.sqlite_lock)
        self.sqlite_lock = None
        self.started = False

    @asynccontextmanager
    async def lifespan(self, app: FastAPI):
        await self.start()
        try:
            yield
        finally:
            await self.stop()
