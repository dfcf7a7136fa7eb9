"""Prometheus metrics, exposed at /metrics (one registry per app so tests stay independent).

Names follow the Prometheus conventions: base units (`_seconds`, `_bytes`), counters end in
`_total`, and every label takes a bounded set of values (routes are templates, model classes
are the configured ones, outcomes and reasons are short fixed words). docs/operations.md lists
them and docs/grafana-dashboard.json charts them. The queue's own families live in
heddle/queue/metrics.py (PostgreSQL only).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import HTTPConnection

from heddle import process_services

_MODEL_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160)
_TTFT_SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16)
_TOOL_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_LAG_SECONDS = (0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "heddle_http_requests_total", "HTTP requests by route and status",
            ["method", "route", "status"], registry=self.registry,
        )
        self.latency = Histogram(
            "heddle_http_request_duration_seconds", "HTTP request latency by route",
            ["method", "route"], registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
        )
        self.runs = Counter(
            "heddle_runs_total", "Loom runs reaching a state", ["state"], registry=self.registry,
        )
        self.runs_active = Gauge(
            "heddle_runs_executing", "Runs currently executing in this process", registry=self.registry,
        )
        self.identify = Counter(
            "heddle_identify_total", "Identify lookups by rail and result",
            ["rail", "result"], registry=self.registry,
        )
        self.credits_charged = Counter(
            "heddle_credits_charged_micro_total", "Micro-credits charged", ["reason"],
            registry=self.registry,
        )
        self.request_log_dropped = Counter(
            "heddle_request_log_dropped_total", "Request-log rows dropped (queue full or write error)",
            registry=self.registry,
        )
        # Connections and streams (heddle/connection_limits.py, loom/stream_limits.py, realtime/admission.py)
        self.connections_open = Gauge(
            "heddle_http_connections_open", "Open HTTP connections (WebSockets excluded)", registry=self.registry,
        )
        self.connections_refused = Counter(
            "heddle_http_connections_refused_total", "HTTP connections refused at a cap (503)",
            ["limit"], registry=self.registry,
        )
        self.head_timeouts = Counter(
            "heddle_http_head_timeouts_total", "Connections closed for a request head not complete in time",
            registry=self.registry,
        )
        self.streams_open = Gauge(
            "heddle_event_streams_open", "Open GET /v1/loom/runs/{id}/events streams", registry=self.registry,
        )
        self.streams_refused = Counter(
            "heddle_event_streams_refused_total", "Event streams refused at a cap (429)", ["limit"],
            registry=self.registry,
        )
        self.realtime_refused = Counter(
            "heddle_realtime_connections_refused_total",
            "WebSocket connections refused at a cap before authentication (pusher error 4100)", ["limit"],
            registry=self.registry,
        )
        # Model calls (recorded by the provider layer, loom/providers/sdk_provider.py), by the
        # configured model class: outcome is ok | truncated | error.
        self.model_calls = Counter(
            "heddle_model_calls_total", "Model calls by model class and outcome (ok, truncated, error)",
            ["model_class", "outcome"], registry=self.registry,
        )
        self.model_call_duration = Histogram(
            "heddle_model_call_duration_seconds", "Model call time, every attempt and retry wait included",
            ["model_class"], buckets=_MODEL_SECONDS, registry=self.registry,
        )
        self.model_tokens = Counter(
            "heddle_model_tokens_total", "Tokens of answered model calls by model class and direction (input, output)",
            ["model_class", "direction"], registry=self.registry,
        )
        self.model_ttft = Histogram(
            "heddle_model_time_to_first_token_seconds",
            "Streamed model calls: from the start of the answering attempt to its first text piece",
            ["model_class"], buckets=_TTFT_SECONDS, registry=self.registry,
        )
        self.model_retries = Counter(
            "heddle_model_retries_total",
            "Model call attempts retried, by model class and reason (rate_limited, server_error, timeout, "
            "connection, stream_broken, stream_incomplete)",
            ["model_class", "reason"], registry=self.registry,
        )
        # Tool calls of runs (loom/tool_steps.py increments them): kind is the tool's kind, status
        # is ok | error | refused (arguments invalid) | timeout | unknown (fate unknown).
        self.tool_calls = Counter(
            "heddle_tool_calls_total", "Tool calls of runs by tool kind and status", ["kind", "status"],
            registry=self.registry,
        )
        self.tool_call_duration = Histogram(
            "heddle_tool_call_duration_seconds", "Tool call time by tool kind", ["kind"], buckets=_TOOL_SECONDS,
            registry=self.registry,
        )
        # MCP servers' inputs past a bound (outbound/mcp_limits.py), and the tool-list cache's bytes.
        self.mcp_limits = Counter(
            "heddle_mcp_limits_total", "MCP lists and calls stopped at a bound, by the bound's error code",
            ["limit"], registry=self.registry,
        )
        self.mcp_cache_bytes = Gauge(
            "heddle_mcp_tool_cache_bytes", "Bytes of the MCP tool lists this process holds in its cache",
            registry=self.registry,
        )
        # Tools left out of a model turn for their names (loom/tools/names.py), by reason; and
        # turns whose tools were over the turn's limits (reason tools_over_turn_limit).
        self.tools_refused = Counter(
            "heddle_tools_refused_total", "Tools not offered to a model, by reason (invalid_name, "
            "reserved_name, tool_name_clash, tools_over_turn_limit)", ["reason"], registry=self.registry,
        )
        # End users' ratings of answers (loom/routes_feedback.py): by agent and rating, no subject.
        self.feedback = Counter(
            "heddle_feedback_total", "Ratings of assistant messages given by end users, by agent and rating",
            ["agent", "rating"], registry=self.registry,
        )
        # Webhook deliveries (webhooks/dispatcher.py): outcome is delivered | retry | failed.
        self.webhook_deliveries = Counter(
            "heddle_webhook_deliveries_total", "Webhook delivery attempts by outcome (delivered, retry, failed)",
            ["outcome"], registry=self.registry,
        )
        self.webhook_lag = Histogram(
            "heddle_webhook_delivery_lag_seconds", "From a webhook event's creation to its successful delivery",
            buckets=_LAG_SECONDS, registry=self.registry,
        )
        # AG-UI and A2A requests (heddle/interop/): protocol is agui | a2a.
        self.interop_requests = Counter(
            "heddle_interop_requests_total", "Requests that reached a run over AG-UI or A2A, by protocol",
            ["protocol"], registry=self.registry,
        )
        # Realtime publishing: the publishers count for themselves (realtime/publishers.py);
        # each scrape reads those counters.
        self.realtime_publishes = _PublisherCounters()
        self.registry.register(self.realtime_publishes)

    def watch_realtime(self, publisher: object | None) -> None:
        """Export this publisher's `sent`/`failed`/`dropped` as `heddle_realtime_publishes_total`."""
        if publisher is not None:
            self.realtime_publishes.publishers.append(publisher)


class _PublisherCounters(Collector):
    """`heddle_realtime_publishes_total{result}` summed over the watched publishers (a counter a
    publisher does not keep counts 0)."""

    RESULTS = ("sent", "failed", "dropped")

    def __init__(self) -> None:
        self.publishers: list[object] = []

    def collect(self):
        family = CounterMetricFamily("heddle_realtime_publishes",
                                     "Realtime events published, by result (sent, failed, dropped)", labels=["result"])
        for result in self.RESULTS:
            family.add_metric([result], sum(int(getattr(p, result, 0)) for p in self.publishers))
        yield family


def process_metrics(conn: HTTPConnection) -> Metrics:
    """This process's metrics, for a route (heddle/process_services.py)."""
    return process_services.of(conn).metrics
