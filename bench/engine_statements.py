"""SQL statements and transactions per run in the engine, counted with SQLAlchemy events.

Runs the app in this process (uvicorn on a loopback port, embedded SQLite by default), posts
scripted runs over HTTP and counts every statement and commit issued from the executor's run
tasks (named `run-<id>`), so the API's own statements (posting the message, polling) are not
included. Three kinds of run: a plain reply, an `identify` tool call, and an `ask:` question.

    python bench/engine_statements.py [--runs N] [--database-url URL] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import uvicorn
from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).parent))
from common import cli, create_agent, free_port  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: Be brief.\ntools:\n  - builtin: identify\n"
KINDS = {"reply": "hello there", "identify": "who is DEUTDEFF?", "ask": "ask: which account?"}


class Counting:
    """Statements and commits made by run tasks, by kind of statement."""

    def __init__(self, engine):
        self.statements: Counter[str] = Counter()
        self.commits = 0
        self.enabled = False
        event.listen(engine.sync_engine, "before_cursor_execute", self._statement)
        event.listen(engine.sync_engine, "commit", self._commit)

    @staticmethod
    def _in_run_task() -> bool:
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return False
        return task is not None and task.get_name().startswith("run-")

    def _statement(self, conn, cursor, statement, parameters, context, executemany):
        if self.enabled and self._in_run_task():
            self.statements[" ".join(statement.split()[:3])[:40]] += 1

    def _commit(self, conn):
        if self.enabled and self._in_run_task():
            self.commits += 1


def serve_counting(db_url: str, **settings):
    """The app on a loopback port in a thread of this process, rate limits off (as in every
    bench: a fast server polled every 5 ms exceeds the default 100 requests a second per key),
    and a `Counting` of its run tasks' statements: `(port, counting, server, thread)`."""
    from heddle.app import create_app
    from heddle.config import Settings

    port = free_port()
    app = create_app(Settings(database_url=db_url, host="127.0.0.1", port=port, log_level="WARNING",
                              rate_limit_per_key="off", rate_limit_per_subject="off", **settings))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    return port, Counting(app.state.services.get().db.engine), server, thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs of each kind (default 20)")
    parser.add_argument("--database-url", default=None, help="default: a new SQLite file")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--detail", action="store_true", help="print statements by kind")
    args = parser.parse_args()


    tmp = tempfile.TemporaryDirectory()
    db_url = args.database_url or f"sqlite+aiosqlite:///{Path(tmp.name) / 'bench.db'}"
    cli(db_url, "migrate")
    ws = cli(db_url, "workspace", "create", "--name", "bench", "--credits", "1000000")["id"]
    secret = cli(db_url, "key", "create", "--workspace", ws)["secret"]
    agent = create_agent(db_url, ws, AGENT)

    port, counting, server, thread = serve_counting(db_url)

    results = {}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        for kind, content in KINDS.items():
            counting.statements.clear()
            counting.commits = 0
            counting.enabled = True
            for i in range(args.runs):
                h = {"Authorization": f"Bearer {secret}", "Service-Subject": f"bench:{kind}:{i}"}
                thread_id = http.post("/v1/loom/threads", json={"agent": agent}, headers=h).json()["data"]["id"]
                run_id = http.post(f"/v1/loom/threads/{thread_id}/messages", json={"content": content},
                                   headers=h).json()["data"]["run_id"]
                while True:
                    run = http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]
                    if run["state"] != "running":
                        break
                    time.sleep(0.005)
            time.sleep(0.2)  # the last run's executor task releases its lease after the state change
            counting.enabled = False
            total = sum(counting.statements.values())
            results[kind] = {"runs": args.runs, "statements_per_run": round(total / args.runs, 2),
                             "commits_per_run": round(counting.commits / args.runs, 2),
                             "final_state": run["state"],
                             "by_statement": {k: round(v / args.runs, 2) for k, v in counting.statements.most_common()}}
    server.should_exit = True
    thread.join(10)
    tmp.cleanup()
    if args.json:
        print(json.dumps({"benchmark": "engine_statements", "database": db_url.split(":", 1)[0],
                          "results": results}))
        return
    print(f"{'run':>9} {'statements/run':>15} {'commits/run':>12}  final state")
    for kind, r in results.items():
        print(f"{kind:>9} {r['statements_per_run']:>15.2f} {r['commits_per_run']:>12.2f}  {r['final_state']}")
        if args.detail:
            for statement, n in r["by_statement"].items():
                print(f"{'':>12}{n:>6.2f}  {statement}")


if __name__ == "__main__":
    main()
