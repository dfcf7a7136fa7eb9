"""Runs at scale: runs/s and message -> closed medians, scripted runs.

Part one (here): the embedded default, one `heddle serve` on SQLite, at 1, 10 and 100
concurrent threads. Part two (bench/scale_queue.py): PostgreSQL, one API and 1, 2 and 4 worker
processes (plus the in-process baseline on the same PostgreSQL), scripted runs and runs with a
50 ms hosted tool.

    python bench/scale.py [--runs N] [--workers 0,1,2,4] [--queue-threads 32] [--no-queue] [--no-embedded] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, create_agent  # noqa: E402
from run_driver import heddle_calls, run_round, summarise  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: Be brief.\ntools: []\n"
THREADS = (1, 10, 100)


def scripted_agent(db_url: str, workspace: str) -> str:
    return create_agent(db_url, workspace, AGENT)


def runs_per_thread(concurrency: int, runs: int) -> int:
    """Fewer runs per thread when many threads run at once, so every level takes similar time."""
    return max(2, runs * 10 // (concurrency + 9))


def embedded_default(runs: int = 20, threads: tuple[int, ...] = THREADS) -> list[dict]:
    """One `heddle serve` process on SQLite (the default), scripted runs."""
    results = []
    with Server() as server:
        ws, secret = server.tenant()
        agent = scripted_agent(server.db_url, ws)
        for concurrency in threads:
            calls = heddle_calls(secret, agent, f"scale{concurrency}")
            r = asyncio.run(run_round("heddle", server.base_url, concurrency,
                                      runs_per_thread(concurrency, runs), *calls))
            results.append({"layout": "embedded (1 process, SQLite)", "threads": concurrency, **summarise([r])})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs per thread at 1 thread (fewer at more)")
    parser.add_argument("--workers", default="0,1,2,4", help="PostgreSQL part: worker counts (0 = in-process)")
    parser.add_argument("--queue-threads", type=int, default=32, help="PostgreSQL part: concurrent threads")
    parser.add_argument("--queue-runs", type=int, default=5, help="PostgreSQL part: runs per thread")
    parser.add_argument("--no-queue", action="store_true", help="only the embedded default")
    parser.add_argument("--no-embedded", action="store_true", help="only the PostgreSQL part")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [] if args.no_embedded else embedded_default(args.runs)
    if not args.no_queue:
        from scale_queue import queue_mode

        for n in (int(x) for x in args.workers.split(",")):
            results += queue_mode(n, threads=args.queue_threads, runs_per_thread=args.queue_runs)
    if args.json:
        print(json.dumps({"benchmark": "scale", "results": results}))
        return
    print(f"{'layout':<36} {'kind':>9} {'threads':>7} {'runs':>6} {'closed median':>14} {'runs/s':>8} {'polls/run':>9}")
    for r in results:
        print(f"{r['layout']:<36} {r.get('kind', 'scripted'):>9} {r['threads']:>7} {r['runs']:>6} "
              f"{r['done_median_ms']:>12.1f}ms {r['runs_per_s']:>8.1f} {r['polls_per_run']:>9.2f}")
    print("closed median: client-measured, message POST -> the poll that saw the run closed "
          "(polls 5 ms after, then 1.5x longer each time, at most 50 ms apart)")


if __name__ == "__main__":
    main()
