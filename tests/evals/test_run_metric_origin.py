"""heddle_runs_total counts users' runs: a run of the console's playground or of an eval stays out
(issue 46, "excluded from user metrics"); the runs themselves are charged and traced as any."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from heddle.loom.engine import RunEngine
from heddle.observability.metrics import Metrics
from heddle.runs_vocabulary import RUN_ORIGINS


def closed(metrics: Metrics) -> float:
    return metrics.registry.get_sample_value("heddle_runs_total", {"state": "closed"}) or 0.0


@pytest.mark.parametrize("origin", RUN_ORIGINS)
def test_only_users_runs_are_counted(origin):
    metrics = Metrics()
    engine = SimpleNamespace(metrics=metrics)
    RunEngine._count(engine, SimpleNamespace(origin=origin), "closed")
    assert closed(metrics) == (0.0 if origin in ("playground", "eval") else 1.0)
