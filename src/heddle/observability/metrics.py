"""Prometheus metrics, exposed at /metrics (one registry per app so tests stay independent)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.requests import HTTPConnection

from heddle import process_services


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "heddle_http_requests_total", "HTTP requests by route and status",
            ["method", "route", "status"], registry=self.registry,
        )
        self.latency = Histogram(
            "heddle_http_request_seconds", "HTTP request latency by route",
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


def process_metrics(conn: HTTPConnection) -> Metrics:
    """This process's metrics, for a route (heddle/process_services.py)."""
    return process_services.of(conn).metrics
