"""What memory costs (issue 44), measured against a baseline in the same run.

1. Statements and writing commits per run, counted with SQLAlchemy events in the executor's run
   tasks (bench/engine_statements.py's `Counting`): a plain scripted reply (the baseline), the
   same reply by an agent with `memory: {remember: true}` and three facts about the subject, and
   a run whose thread no longer fits its budget so that it summarizes first. Also each kind's
   median wall time from the post to the closed run, and credits per run.
2. The time to build a model request (history read, and the summary read and the rebuild when
   the history is cut) for a thread of 2,000 messages against one of 20: the goal is within 2x.

    python bench/memory.py [--runs N] [--builds N] [--database-url URL] [--json]

Figures are ratios against the baseline of the same run; the machine may be loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import cli, create_agent  # noqa: E402
from engine_statements import serve_counting  # noqa: E402

BUDGET = 150
CLASSES = {"tight": {"provider": "scripted", "history_tokens": BUDGET, "input_price_per_1k": 0.01,
                     "output_price_per_1k": 0.02}}
AGENTS = {
    "plain": "name: plain\nmodel_class: scripted\ninstructions: Be brief.\n",
    "remembering": "name: remembering\nmodel_class: scripted\ninstructions: Be brief.\nmemory:\n  remember: true\n",
    "summarizing": "name: summarizing\nmodel_class: tight\ninstructions: Be brief.\n",
}


def seed_messages(db_url: str, thread_id: str, count: int) -> None:
    """`count` earlier messages in the thread (of a finished run), as months of talk leave them."""
    from sqlalchemy import insert

    from heddle.db.base import Database, utcnow
    from heddle.loom.models import Message

    async def go():
        db = Database(db_url)
        earlier = uuid.uuid4()
        async with db.transaction() as s:
            await s.execute(insert(Message), [
                {"id": uuid.uuid4(), "thread_id": uuid.UUID(thread_id), "run_id": earlier, "seq": i + 1,
                 "role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "word " * 20,
                 "created_at": utcnow()} for i in range(count)])
        await db.engine.dispose()

    asyncio.run(go())


def add_facts(db_url: str, workspace: str, subject: str, n: int) -> None:
    from heddle.db.base import Database
    from heddle.loom.memory_models import Memory

    async def go():
        db = Database(db_url)
        async with db.transaction() as s:
            for i in range(n):
                s.add(Memory(workspace_id=workspace, subject=subject, content=f"fact {i} about the person",
                             source="api"))
        await db.engine.dispose()

    asyncio.run(go())


def build_times(db_url: str, run_id: str, builds: int) -> list[float]:
    """Milliseconds to build the model request of `run_id`'s next turn, as the engine does."""
    from heddle.db.base import Database
    from heddle.loom.history import build_conversation
    from heddle.loom.models import AgentVersion, Run
    from heddle.loom.summaries import latest_summary

    async def go():
        db = Database(db_url)
        async with db.session() as s:
            run = await s.get(Run, uuid.UUID(run_id))
            agent = await s.get(AgentVersion, (run.agent_id, run.agent_version))
        times = []
        for _ in range(builds):
            started = time.perf_counter()
            report: dict = {}
            async with db.session() as s:
                await build_conversation(s, run, agent, [], history_tokens=BUDGET, provider="scripted", report=report)
            if report.get("dropped_through_seq"):
                async with db.session() as s:
                    summary = await latest_summary(s, run.thread_id)
                    await build_conversation(s, run, agent, [], history_tokens=BUDGET, provider="scripted",
                                             report={}, summary=(summary.through_seq, summary.content))
            times.append((time.perf_counter() - started) * 1000)
        await db.engine.dispose()
        return times

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs of each kind (default 20)")
    parser.add_argument("--builds", type=int, default=50, help="request builds per thread size (default 50)")
    parser.add_argument("--database-url", default=None, help="default: a new SQLite file")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()


    os.environ["HEDDLE_MODEL_CLASSES"] = json.dumps(CLASSES)  # for the CLI's agent files too
    tmp = tempfile.TemporaryDirectory()
    db_url = args.database_url or f"sqlite+aiosqlite:///{Path(tmp.name) / 'bench.db'}"
    cli(db_url, "migrate")
    ws = cli(db_url, "workspace", "create", "--name", "bench", "--credits", "1000000")["id"]
    secret = cli(db_url, "key", "create", "--workspace", ws)["secret"]
    agents = {kind: create_agent(db_url, ws, text) for kind, text in AGENTS.items()}

    port, counting, server, thread = serve_counting(db_url, model_classes=json.dumps(CLASSES))

    def headers(subject: str) -> dict:
        return {"Authorization": f"Bearer {secret}", "Service-Subject": subject}

    def run_once(http, agent: str, subject: str, prepare=None) -> tuple[dict, float]:
        h = headers(subject)
        thread_id = http.post("/v1/loom/threads", json={"agent": agent}, headers=h).json()["data"]["id"]
        if prepare is not None:
            prepare(thread_id)
        counting.enabled = True
        started = time.perf_counter()
        run_id = http.post(f"/v1/loom/threads/{thread_id}/messages", json={"content": "hello there"},
                           headers=h).json()["data"]["run_id"]
        while (run := http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"])["state"] == "running":
            time.sleep(0.005)
        elapsed = (time.perf_counter() - started) * 1000
        time.sleep(0.05)  # the executor task releases its lease after the state change
        counting.enabled = False
        return run, elapsed

    results: dict = {}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        for kind in ("plain", "remembering", "summarizing"):
            counting.statements.clear()
            counting.commits = 0
            walls, credits = [], []
            for i in range(args.runs):
                subject = f"bench:{kind}:{i}"
                prepare = None
                if kind == "remembering":
                    add_facts(db_url, ws, subject, 3)
                elif kind == "summarizing":
                    prepare = lambda thread_id: seed_messages(db_url, thread_id, 40)  # noqa: E731
                run, wall = run_once(http, agents[kind], subject, prepare)
                assert run["state"] == "closed", run
                walls.append(wall)
                credits.append(run["cost_credits"])
            total = sum(counting.statements.values())
            results[kind] = {"runs": args.runs, "statements_per_run": round(total / args.runs, 2),
                             "commits_per_run": round(counting.commits / args.runs, 2),
                             "median_ms": round(statistics.median(walls), 2),
                             "credits_per_run": round(statistics.mean(credits), 6)}
        # Request build: threads of 20 and 2,000 messages, each summarized once by a real run.
        sizes = {}
        for size in (20, 2000):
            h = headers(f"bench:build:{size}")
            thread_id = http.post("/v1/loom/threads", json={"agent": agents["summarizing"]},
                                  headers=h).json()["data"]["id"]
            seed_messages(db_url, thread_id, size)
            run_id = http.post(f"/v1/loom/threads/{thread_id}/messages", json={"content": "and now?"},
                               headers=h).json()["data"]["run_id"]
            while http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]["state"] == "running":
                time.sleep(0.01)
            sizes[size] = run_id
    server.should_exit = True
    thread.join(10)
    builds = {size: statistics.median(build_times(db_url, run_id, args.builds)) for size, run_id in sizes.items()}
    tmp.cleanup()
    base = results["plain"]
    for r in results.values():
        r["statements_ratio"] = round(r["statements_per_run"] / base["statements_per_run"], 2)
        r["commits_ratio"] = round(r["commits_per_run"] / base["commits_per_run"], 2)
        r["time_ratio"] = round(r["median_ms"] / base["median_ms"], 2)
    build = {"median_ms_20": round(builds[20], 3), "median_ms_2000": round(builds[2000], 3),
             "ratio": round(builds[2000] / builds[20], 2), "goal": 2.0}
    if args.json:
        print(json.dumps({"benchmark": "memory", "database": db_url.split(":", 1)[0], "runs": results,
                          "request_build": build}))
        return
    print(f"{'run':>12} {'statements':>11} {'commits':>8} {'median ms':>10} {'credits':>9}  "
          "ratios (stmts, commits, time)")
    for kind, r in results.items():
        print(f"{kind:>12} {r['statements_per_run']:>11.2f} {r['commits_per_run']:>8.2f} {r['median_ms']:>10.2f} "
              f"{r['credits_per_run']:>9.4f}  {r['statements_ratio']}, {r['commits_ratio']}, {r['time_ratio']}")
    print(f"model request build: 20 messages {build['median_ms_20']} ms, 2,000 messages {build['median_ms_2000']} ms "
          f"(ratio {build['ratio']}, goal within {build['goal']}x)")


if __name__ == "__main__":
    main()
