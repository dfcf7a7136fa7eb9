"""The /metrics families: Prometheus names, the renamed HTTP histogram, the realtime publishers'
own counters exported, and the Grafana dashboard in docs/ querying only families that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from heddle.observability.metrics import Metrics
from heddle.queue.metrics import QueueMetrics
from heddle.realtime.hub import RealtimeHub
from heddle.realtime.publishers import BuiltinPublisher

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
NAME = re.compile(r"\bheddle_[a-z0-9_]+")
HISTOGRAM_PARTS = re.compile(r"_(bucket|sum|count)$")


def families(exposition: str) -> dict[str, str]:
    """Family name -> type, as a scraper sees them (counters under their `_total` name)."""
    found = {}
    for family in text_string_to_metric_families(exposition):
        name = family.name + "_total" if family.type == "counter" else family.name
        found[name] = family.type
    return found


def test_every_family_follows_the_conventions(http):
    found = families(http.get("/metrics").text)
    assert "heddle_http_request_duration_seconds" in found and "heddle_http_request_seconds" not in found
    for name, kind in found.items():
        if not name.startswith("heddle_"):
            continue
        assert (kind == "counter") == name.endswith("_total"), name
        if kind == "histogram":
            assert name.endswith("_seconds"), name
    for name in ("heddle_model_calls_total", "heddle_model_tokens_total", "heddle_model_time_to_first_token_seconds",
                 "heddle_model_retries_total", "heddle_tool_calls_total", "heddle_webhook_deliveries_total",
                 "heddle_webhook_delivery_lag_seconds", "heddle_realtime_publishes_total", "heddle_event_streams_open"):
        assert name in found, name


def test_the_dashboard_queries_only_families_that_exist(http):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", ())]
    assert len(exprs) >= 20
    # The serve process's /metrics, plus the families a PostgreSQL worker adds to its own /metrics.
    queue_registry = CollectorRegistry()
    QueueMetrics(queue_registry, db=None)
    known = families(http.get("/metrics").text) | families(generate_latest(queue_registry).decode())
    queried = {NAME.search(part).group(0) for expr in exprs for part in NAME.findall(expr)}
    missing = {name for name in queried if name not in known and HISTOGRAM_PARTS.sub("", name) not in known}
    assert not missing
    for name in queried:  # a histogram is queried by its buckets, sums or counts, never bare
        base = HISTOGRAM_PARTS.sub("", name)
        assert known.get(name) != "histogram" or base != name, name
    assert {panel["title"] for panel in dashboard["panels"]} >= {"Model calls by class and outcome",
                                                                  "Time to first token p50 / p95"}


async def test_realtime_publishes_come_from_the_publishers_counters():
    metrics = Metrics()
    publisher = BuiltinPublisher(RealtimeHub())
    metrics.watch_realtime(publisher)
    await publisher.publish("private-thread-1", "message", {"id": 1})
    await publisher.publish("private-thread-1", "message", {"id": 2})
    publisher.failed += 1  # as a failing hub would count it

    def value(result: str) -> float:
        return metrics.registry.get_sample_value("heddle_realtime_publishes_total", {"result": result})

    assert (value("sent"), value("failed"), value("dropped")) == (2, 1, 0)
