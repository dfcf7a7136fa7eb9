"""Prometheus metrics, exposed at /metrics (one registry per app so tests stay independent)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


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
