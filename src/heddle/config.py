"""Runtime settings, read from `HEDDLE_*` environment variables (pydantic-settings).

Each domain reads what it needs from one `Settings` object so that a deployment is described
in one place (see docs/configuration.md).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HEDDLE_", extra="ignore")

    # --- service ---
    database_url: str = "sqlite+aiosqlite:///./heddle.db"
    # PostgreSQL connections per process: the pool and how far it may overflow when busy. Every
    # API and worker process holds up to their sum (plus the queue's and the bus's few), which
    # must stay under the server's max_connections (100 by default) across the deployment.
    # All 30 pooled, none overflow: an overflow connection is opened and closed per checkout (a
    # backend started and authenticated each time), which under load cost more than it served
    # (docs/decisions.md, "Pooled connections, not overflow"). Pooled ones open only when needed.
    db_pool_size: int = Field(default=30, ge=1, le=500)
    db_max_overflow: int = Field(default=0, ge=0, le=500)
    host: str = "127.0.0.1"
    port: int = 8080
    dev: bool = False
    log_level: str = "INFO"
    log_json: bool = True
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    migrate_on_start: bool = True
    access_log: bool = True  # one log line per request (method, route, status, ms, request id)
    # Python 3.12+: a new task's first step runs when it is created (heddle/serving.py,
    # start_tasks_eagerly); no effect on 3.11. Off by default: its gain was not steady
    # (docs/decisions.md, "Eager tasks").
    eager_tasks: bool = False

    # --- the console (heddle/operators, heddle/console; docs/console.md) ---
    # Where operators reach this server; login links start with it. Unset: http://{host}:{port}.
    public_url: str = Field(default="", pattern=r"^(https?://[^/?#\s]+/?)?$")
    console_link_ttl: float = Field(default=900.0, gt=0)  # seconds a login link stays usable (once)
    console_session_ttl: float = Field(default=12 * 3600.0, gt=0)  # idle seconds before a session ends
    # Development only: drop `Secure` from the session cookie, for plain http on a non-loopback host.
    console_insecure_cookie: bool = False

    # --- request limits (heddle/api/limits.py) ---
    max_header_bytes: int = Field(default=16 * 1024, ge=1024)  # all headers together: 431 beyond
    max_header_count: int = Field(default=100, ge=8)
    max_json_depth: int = Field(default=64, ge=2)
    body_timeout: float = Field(default=30.0, gt=0)  # a body not fully sent by then: 408
    # --- connections (heddle/http_protocol.py, heddle/connection_limits.py) ---
    head_timeout: float = Field(default=10.0, gt=0)  # a request head not complete by then: 408, closed
    max_connections: int = Field(default=2048, ge=0)  # open HTTP connections in all (0 = no cap): 503 beyond
    max_connections_per_address: int = Field(default=256, ge=0)  # ... from one client address (0 = no cap)
    request_log_retention_days: float = Field(default=30.0, gt=0)
    request_log_prune_interval: float = Field(default=3600.0, gt=0)
    # The request log is written in batches, one transaction per this many seconds at most.
    request_log_flush_seconds: float = Field(default=0.5, gt=0, le=60)

    # --- safe retries (Idempotency-Key) ---
    idempotency_ttl_hours: float = Field(default=24.0, gt=0)
    idempotency_prune_interval_s: float = Field(default=600.0, gt=0)
    fault_pause_after_commit_s: float = Field(default=0.0, ge=0)  # crash tests only; see configuration.md

    # --- rate limits (`limits` notation; "off" disables; a workspace may override each) ---
    rate_limit_per_key: str = "100/second;3000/minute"
    rate_limit_per_subject: str = "20/second;300/minute"  # a person's burst; the minute bounds the rest
    rate_limit_storage: str = "memory://"  # or redis://host:6379 to share counters between processes
    # Failed authentications (401) per client address; past it, 429 before any credential is checked
    rate_limit_auth_failures: str = "30/minute;300/hour"

    @field_validator("database_url")
    @classmethod
    def _usable_database_url(cls, value: str) -> str:
        from heddle.db.urls import check_database_url

        return check_database_url(value)  # `postgres://...` stops here in one line, not at first use

    @model_validator(mode="after")
    def _pusher_app_id(self) -> Settings:
        # The `pusher` library refuses any other app id at its first publish, long after start-up
        # (soketi's default `app-id` included); the built-in server only compares it.
        if self.realtime == "pusher" and self.pusher_app_id and not self.pusher_app_id.isdigit():
            raise ValueError(f"HEDDLE_PUSHER_APP_ID: must be digits with HEDDLE_REALTIME=pusher (got "
                             f"{self.pusher_app_id!r}); for soketi set SOKETI_DEFAULT_APP_ID to a number too")
        return self

    @field_validator("rate_limit_per_key", "rate_limit_per_subject", "rate_limit_auth_failures")
    @classmethod
    def _rate_limit_rule(cls, value: str) -> str:
        from heddle.rate_rules import parse_rule

        parse_rule(value)  # a typo stops the server at start with the rule's own message
        return value

    # --- billing (credits are shown as numbers, kept as integer micro-credits) ---
    identify_price_credits: float = Field(default=1.0, ge=0)

    # --- Loom ---
    model_classes: str = ""  # JSON object: class name -> provider config; `scripted` is built in
    run_max_turns: int = Field(default=16, ge=1)
    run_max_seconds: float = Field(default=300.0, gt=0)
    run_concurrency: int = Field(default=64, ge=1)
    # How many of the tool calls one model turn asked for run at once (loom/tool_steps.py).
    run_tool_concurrency: int = Field(default=4, ge=1)
    # How long an executor holds a run without renewing (it renews every third of it), and how
    # often a process looks for runs whose holder's lease expired (heddle/loom/lease.py).
    run_lease_seconds: float = Field(default=30.0, ge=0.5)
    run_sweep_seconds: float = Field(default=10.0, ge=0.1)
    tool_call_price_credits: float = Field(default=0.0, ge=0)
    # How long an MCP server's tool list is trusted (per connection and subject) before a run
    # lists it again; a `list_changed` notification drops it sooner (heddle/loom/tools/mcp.py).
    mcp_tools_ttl_seconds: float = Field(default=300.0, gt=0)
    # How much of an MCP server is taken in (heddle/outbound/mcp_limits.py; issue 40): a tool
    # list's bytes (all pages), pages and tools, one list's or call's whole time with its
    # resumptions, resumptions of one request, and the tool-list cache's bytes (all lists).
    mcp_max_list_bytes: int = Field(default=512 * 1024, ge=1024)
    mcp_max_pages: int = Field(default=20, ge=1)
    mcp_max_tools: int = Field(default=256, ge=1)
    mcp_call_deadline_seconds: float = Field(default=30.0, gt=0)
    mcp_max_resumptions: int = Field(default=5, ge=0)
    mcp_cache_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    mcp_refusal_seconds: float = Field(default=60.0, gt=0)  # a list refused at a bound: not asked again
    # What one model turn may offer (heddle/loom/tools/names.py): tools, and bytes of their
    # parameters' JSON Schemas; past either the run fails with `tools_over_turn_limit`.
    tools_max_per_turn: int = Field(default=128, ge=1)
    tools_max_schema_bytes: int = Field(default=256 * 1024, ge=1024)
    # Memory (loom/memory.py, docs/memory.md): facts a subject may have, characters per fact, and
    # how many facts (and estimated tokens of them) a run's model is given, newest first.
    memory_max_facts: int = Field(default=100, ge=1, le=10_000)
    memory_fact_max_chars: int = Field(default=500, ge=16, le=8000)
    memory_prompt_max_facts: int = Field(default=20, ge=0, le=1000)
    memory_prompt_max_tokens: int = Field(default=800, ge=0, le=100_000)
    # Schedules (loom/schedules.py): how often a process looks for due ones, how many it claims
    # per transaction, and the caps on active schedules per thread and per subject.
    schedule_poll_seconds: float = Field(default=1.0, ge=0)  # 0 = this process fires none
    schedule_batch: int = Field(default=50, ge=1, le=1000)
    schedules_max_per_thread: int = Field(default=20, ge=1)
    schedules_max_per_subject: int = Field(default=100, ge=1)
    # How often the retention pruner erases threads idle past their workspace's retention_days (0 = never).
    retention_sweep_seconds: float = Field(default=3600.0, ge=0)
    sse_heartbeat_seconds: float = Field(default=15.0, gt=0)  # GET /runs/{id}/events: comment line when idle
    sse_poll_seconds: float = Field(default=1.0, gt=0)  # ... and how often it looks for other processes' events
    # Open streams at once (per process; 0 = no cap): 429 `rate_limited` beyond (loom/stream_limits.py)
    sse_max_streams_per_key: int = Field(default=100, ge=0)
    sse_max_streams_per_subject: int = Field(default=10, ge=0)
    # ... from one client address, and in all (0 = half of max_connections, so that streams never
    # hold the connections other requests need; issue 40). They count GET /mcp streams too.
    sse_max_streams_per_address: int = Field(default=100, ge=0)
    sse_max_streams_total: int = Field(default=0, ge=0)
    # GET /mcp (the MCP endpoint's event stream): its longest life, and how often open ones are
    # checked for a revoked key (closed within that many seconds of `heddle key revoke`).
    mcp_stream_max_seconds: float = Field(default=600.0, gt=0)
    mcp_stream_check_seconds: float = Field(default=2.0, gt=0)

    # --- attachments (heddle/loom/attachments/; docs/configuration.md "Attachments") ---
    attachment_max_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)  # one file: 413 beyond
    attachments_per_message: int = Field(default=10, ge=1)  # ids one message may name
    attachment_thread_bytes: int = Field(default=100 * 1024 * 1024, ge=0)  # all files of a thread (0 = no cap)
    attachment_workspace_bytes: int = Field(default=1024 * 1024 * 1024, ge=0)  # ... of a workspace (0 = no cap)
    attachment_upload_seconds: float = Field(default=120.0, gt=0)  # an upload not received by then: 408
    attachment_max_image_pixels: int = Field(default=40_000_000, ge=1)  # larger: a decompression bomb
    attachment_pdf_max_pages: int = Field(default=50, ge=1)  # pages whose text is read
    attachment_pdf_max_chars: int = Field(default=100_000, ge=100)  # characters of text kept from a PDF
    attachment_url_seconds: float = Field(default=300.0, gt=0)  # life of a signed URL handed to a tool host

    # --- realtime ---
    realtime: Literal["builtin", "pusher", "off"] = "builtin"
    pusher_app_id: str = ""  # with HEDDLE_REALTIME=pusher: digits only (see _pusher_app_id)
    pusher_key: str = ""
    pusher_secret: str = ""
    pusher_cluster: str = "mt1"
    pusher_host: str = ""
    pusher_port: int | None = None
    pusher_ssl: bool = True
    realtime_public_host: str = ""  # ws host browsers use for the built-in server
    realtime_public_port: int | None = None
    realtime_force_tls: bool = False
    # Built-in server's sockets (realtime/admission.py; 4100 beyond; 0 = no cap): in all, per client
    # address, and not yet subscribed with a valid channel signature
    realtime_max_connections: int = Field(default=10_000, ge=1)
    realtime_max_connections_per_address: int = Field(default=100, ge=0)
    realtime_max_unauthenticated: int = Field(default=1_000, ge=0)

    # --- outbound calls to the caller's backend ---
    outbound_allow_private: bool = False
    outbound_connect_timeout: float = Field(default=5.0, gt=0)
    outbound_timeout: float = Field(default=15.0, gt=0)
    outbound_max_response_bytes: int = Field(default=1024 * 1024, ge=1024)

    # --- run webhooks (per workspace; see docs/configuration.md) ---
    webhook_dispatcher: bool = True  # deliver owed webhooks from this process
    webhook_poll_seconds: float = Field(default=1.0, gt=0)  # how often to look for due deliveries
    webhook_retry_base_seconds: float = Field(default=10.0, gt=0)  # first retry delay, doubled each time
    webhook_retry_max_seconds: float = Field(default=3600.0, gt=0)  # ceiling of a retry delay
    webhook_retry_hours: float = Field(default=72.0, gt=0)  # retried this long before it is given up
    webhook_concurrency: int = Field(default=16, ge=1)  # deliveries in flight per process

    # --- direct mode (JWKS) ---
    jwks_cache_ttl: float = Field(default=300.0, gt=0)
    jwks_refresh_min_interval: float = Field(default=30.0, ge=0)
    # A whole JWKS fetch; only that workspace's token checks wait for it (per-URI single-flight).
    jwks_fetch_timeout: float = Field(default=5.0, gt=0)
    session_token_cache_size: int = Field(default=10_000, ge=0)  # verified tokens remembered; 0 = off

    # --- Identify holder-name resolution providers (unset = `unavailable`) ---
    name_resolution_timeout: float = Field(default=5.0, gt=0)
    name_cache_ttl: float = Field(default=300.0, ge=0)
    paystack_base_url: str = "https://api.paystack.co"
    paystack_secret_key: str = ""
    momo_base_url: str = ""
    momo_subscription_key: str = ""
    momo_api_user: str = ""
    momo_api_key: str = ""
    momo_target_environment: str = "sandbox"

    # --- scale-out (PostgreSQL; docs/operations.md "Several processes") ---
    executor: Literal["inprocess", "queue"] = "inprocess"
    event_bus: Literal["memory", "postgres", "redis"] = "memory"
    redis_url: str = "redis://127.0.0.1:6379/0"
    event_bus_channel: str = Field(default="heddle_events", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    worker_concurrency: int = Field(default=16, ge=1)  # runs one `heddle worker` executes at once
    worker_port: int | None = Field(default=None, ge=0, le=65535)  # health + metrics; unset = none
    worker_shutdown_grace: float = Field(default=30.0, ge=0)  # SIGTERM: finish for this long, then hand back
    worker_heartbeat_seconds: float = Field(default=10.0, gt=0)
    worker_stalled_seconds: float = Field(default=30.0, gt=0)  # no heartbeat this long: its jobs are retried

    def console_base_url(self) -> str:
        """The origin login links and the console's Origin check use (no trailing slash)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def sse_streams_total(self) -> int:
        """The cap on all open event streams of a process (0 = none): the setting, else half of
        max_connections."""
        return self.sse_max_streams_total or self.max_connections // 2

    @property
    def allow_private_outbound(self) -> bool:
        return self.outbound_allow_private or self.dev


@lru_cache
def get_settings() -> Settings:
    return Settings()
