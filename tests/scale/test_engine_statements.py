"""The engine's statement budget per run (bench/engine_statements.py): counts, not timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "bench" / "engine_statements.py"

# Measured 2026-11-23 on SQLite (before the batching: 21, 46 and 27). A change that adds a
# statement to every run shows here first.
# Run control (loom/cancellation.py) adds one statement to every run that ends: the finishing
# transaction looks for the thread's next queued run (if_busy: enqueue), 8 -> 9 and 26 -> 27.
# The stored run-event log behind SSE and the webhook outbox (loom/event_log.py, loom/event_outbox.py) write in the
# step's own transaction: each step that changes the run stores its run.updated/message.created
# rows (max seq read + insert) and a reply's deltas commit in their own batch, 9 -> 15, 27 -> 33
# and 12 -> 15, with one more commit for a streamed reply.
# Issue 13 (busy servers): a new run is inserted already claimed by the in-process executor (no
# claim transaction), and on SQLite the delta writer takes no row lock (its write transaction is
# the only one): 15 -> 13, 33 -> 31 and 15 -> 14 statements, one commit fewer each. A reply's
# deltas that no writer took yet are stored in the turn's own transaction (RunEventLog.take):
# 13 -> 11 and 31 -> 29, one commit fewer for a reply (a scripted reply is one commit).
# Issue 28: a run's own Identify call is written to the request log by the transaction that
# records the call (so the trace has it when the run ends), not later by the request-log writer's
# own transaction: one statement moves into the run (28.2 -> 29.2 measured), no commit is added.
BUDGET = {"reply": 11, "identify": 30, "ask": 14}
COMMITS = {"reply": 1, "identify": 4, "ask": 2}


@pytest.mark.slow
def test_statements_per_run_stay_within_budget(tmp_path):
    out = subprocess.run([sys.executable, str(BENCH), "--runs", "3", "--json"], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])["results"]
    for kind, budget in BUDGET.items():
        assert results[kind]["final_state"] == ("awaiting_input" if kind == "ask" else "closed"), results[kind]
        assert results[kind]["statements_per_run"] <= budget, (kind, results[kind])
        assert results[kind]["commits_per_run"] <= COMMITS[kind], (kind, results[kind])
