"""`heddle serve` freezes what its start-up left in the collector's permanent generation, so a
full collection under load does not walk half a million objects that never die, and collects
the young generation every 20,000 net allocations rather than 700 (issue 48)."""

from __future__ import annotations

import os
import re

import httpx

from support.processes import serve_in


def test_serve_settles_its_heap_once_started(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HEDDLE_")}, "HEDDLE_LOG_LEVEL": "INFO"}
    proc, port, output = serve_in(tmp_path, env, ["--dev"])
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    finally:
        proc.terminate()
    log = output()
    settled = re.findall(r"heap_settled\W.*?frozen_objects\W+(\d+)", log)
    assert len(settled) == 1, log[-2000:]
    assert int(settled[0]) > 100_000  # the app, the SDKs, the registries: what start-up built
    # Young collections every 20,000 net allocations, not Python's 700 (serving.settle_heap).
    assert re.findall(r"heap_settled\W.*?young_collection_every\W+(\d+)", log) == ["20000"], log[-2000:]
