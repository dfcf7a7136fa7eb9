"""What a run costs PostgreSQL: commits and statements per run, by process and by cause.

Starts one layout on a fresh database (bench/scale_queue.py `Deployment`: 1 API + N workers in
queue mode, or `--workers 0` for one `heddle serve` executing its own runs), with
`log_statement = all` on that database only, and drives it with one thread of sequential runs
(bench/run_driver.py). Then:

* commits per run, from the same log: per backend, every COMMIT of an explicit transaction
  and every statement outside one (an implicit transaction of its own, such as a `pg_notify`
  or procrastinate's autocommit calls), less the idle rate. `pg_stat_database.xact_commit`
  cannot be read around a live layout: an idle pooled backend keeps its counts unreported
  until it works again or exits (checked on PostgreSQL 15: 100 sessions, 22 s idle, nothing
  reported), and it also counts the read-only transactions in which LISTENing backends read
  the notification queue (tests/scale/test_pg_commits.py counts from the log the same way);
* statements per run by process (`application_name`: `heddle-serve`, `heddle-worker`, the bus's
  and the queue's connections) and by statement, from the server log's lines for the database;
* the idle layout's commits per second and CPU (every Heddle process and its PostgreSQL backends),
  and how many times a second each Heddle process was woken (tests/scale/test_pg_commits.py
  holds the budget; the CPU figure depends on the machine, see docs/operations.md, "Idle wake-ups").

    python bench/pg_costs.py [--workers 1] [--runs 20] [--idle 30] [--top 25] [--json]

Reads the server's log file (`--pg-log`, default the Debian cluster's), so run it on the
database's own machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).parent))
from common import cpu_snapshot, wakeups  # noqa: E402
from run_driver import run_round  # noqa: E402
from scale_queue import MESSAGES, PG_ADMIN, Deployment, ToolHost, _calls  # noqa: E402

PG_LOG = "/var/log/postgresql/postgresql-15-main.log"
_LINE = re.compile(r"^\S+ \S+ \S+ \[(\d+)\] (\S*)@(\S+) LOG:  (?:statement|execute [^:]*): (.*)$")
_LITERALS = re.compile(r"'(?:[^']|'')*'|\b\d+\b|\$\d+")


class Stats:
    """Counters of one database, read through the admin database (so reading costs it nothing)."""

    def __init__(self, dbname: str):
        self.dbname = dbname

    async def _query(self, sql: str, *args):
        conn = await asyncpg.connect(PG_ADMIN)
        try:
            return await conn.fetch(sql, *args)
        finally:
            await conn.close()

    def backends(self) -> dict[int, str]:
        rows = asyncio.run(self._query(
            "SELECT pid, application_name FROM pg_stat_activity WHERE datname = $1", self.dbname))
        return {r["pid"]: r["application_name"] or "?" for r in rows}

    def set_log_all(self) -> None:
        asyncio.run(self._query(f'ALTER DATABASE "{self.dbname}" SET log_statement = \'all\''))


def normalise(statement: str) -> str:
    return _LITERALS.sub("?", " ".join(statement.split()))


SHOWN = 110  # characters of a statement in the listings (whole ones are classified)


def read_statements(log_path: str, offset: int, dbname: str) -> list[tuple[int, str]]:
    """(backend pid, normalised statement) of the database's logged statements after `offset`
    (a statement of several lines is whole: the server writes its later lines after a tab)."""
    out: list[tuple[int, str]] = []
    open_statement = False  # the last line was one of this database's statements
    with open(log_path, errors="replace") as f:
        f.seek(offset)
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("\t"):
                if open_statement:
                    out[-1] = (out[-1][0], out[-1][1] + " " + line)
                continue
            m = _LINE.match(line)
            open_statement = bool(m and m.group(3) == dbname)
            if open_statement:
                out.append((int(m.group(1)), m.group(4)))
    return [(pid, normalise(text)) for pid, text in out]


# A statement outside a transaction block that only reads commits nothing: PostgreSQL gives a
# read-only transaction no transaction id and writes no commit record for it (no WAL, no flush),
# which is why Heddle's read sessions run that way (heddle/db/base.py). A SELECT counts only when
# it calls a function that writes (procrastinate's, `pg_notify`) or locks rows.
_WRITING_SELECT = re.compile(r"\b(procrastinate_\w+|pg_notify|nextval|setval)\s*\(|\bFOR (NO KEY )?(UPDATE|SHARE)\b",
                             re.IGNORECASE)


def _writes(word: str, text: str) -> bool:
    return word not in ("SELECT", "SHOW", "SET", "") or bool(_WRITING_SELECT.search(text))


def commits_of(statements: list[tuple[int, str]]) -> Counter:
    """Transactions committed per backend pid, replaying each backend's statements in order:
    every COMMIT of a block, and every statement outside one that may write (`_writes`)."""
    in_block: dict[int, bool] = {}
    commits: Counter = Counter()
    for pid, text in statements:
        word = text.split(" ", 1)[0].rstrip(";").upper()
        if word in ("BEGIN", "START"):
            in_block[pid] = True
        elif word in ("COMMIT", "END"):
            in_block[pid] = False
            commits[pid] += 1
        elif word in ("ROLLBACK", "ABORT"):
            in_block[pid] = False
        elif not in_block.get(pid) and word not in ("SAVEPOINT", "RELEASE") and _writes(word, text):
            commits[pid] += 1  # an implicit transaction of its own
    return commits


def layout_cpu(dep: Deployment, backends: dict[int, str]) -> float:
    return sum(cpu_snapshot([*(p.pid for p in dep.procs), *backends]).values())


def _cpu_by_role(dep: Deployment, backends) -> dict[str, float]:
    """CPU seconds so far of each Heddle process (`pid<n>`, with children) and backend (`pg<n>`)."""
    out = {f"pid{p.pid}": sum(cpu_snapshot([p.pid]).values()) for p in dep.procs}
    return out | {f"pg{pid}": v for pid, v in cpu_snapshot(list(backends)).items()}


def measure(workers: int, runs: int, idle_s: float, kinds=("scripted", "tool50"), worker_concurrency: int = 16,
            pg_log: str = PG_LOG) -> dict:
    result: dict = {"workers": workers, "runs": runs, "kinds": {}}
    log_all = lambda d: Stats(d.name).set_log_all()  # noqa: E731
    with ToolHost() as host, Deployment(workers, worker_concurrency, before_start=log_all) as dep:
        stats = Stats(dep.name)
        secret, agent = dep.seed(host)
        asyncio.run(run_round("warm-up", dep.base_url, 1, 2, *_calls(secret, agent, "warm", "hello")))
        time.sleep(2.0)
        # The idle rate first: it is subtracted from the commits measured around the runs.
        backends = stats.backends()
        offset = os.path.getsize(pg_log)
        woken0 = [wakeups(p.pid) for p in dep.procs]
        cpu0, t0 = layout_cpu(dep, backends), time.monotonic()
        time.sleep(idle_s)
        cpu1, t1 = layout_cpu(dep, backends), time.monotonic()
        woken = [(wakeups(p.pid) - w) / (t1 - t0) for p, w in zip(dep.procs, woken0, strict=True)]
        logged = read_statements(pg_log, offset, dep.name)
        idle_rate = sum(commits_of(logged).values()) / (t1 - t0)
        idle_statements = Counter((backends.get(pid, "?"), text[:SHOWN]) for pid, text in logged)
        result["idle"] = {"commits_per_s": round(idle_rate, 3), "seconds": round(t1 - t0, 1),
                          "cpu_percent": round(100 * (cpu1 - cpu0) / (t1 - t0), 2),
                          # the API first, then each worker: times a second its threads were woken
                          "wakeups_per_s": [round(w, 1) for w in woken],
                          "statements_per_s": [(proc, text, round(v / (t1 - t0), 3))
                                               for (proc, text), v in idle_statements.most_common()]}
        for kind in kinds:
            offset = os.path.getsize(pg_log)
            started = time.monotonic()
            backends = stats.backends()
            cpu_before = _cpu_by_role(dep, backends)
            r = asyncio.run(run_round(kind, dep.base_url, 1, runs, *_calls(secret, agent, kind, MESSAGES[kind])))
            cpu_after = _cpu_by_role(dep, stats.backends())
            busy_s = time.monotonic() - started
            time.sleep(1.0)  # the log is written by each backend as it goes
            backends |= stats.backends()
            statements = read_statements(pg_log, offset, dep.name)
            per_backend = commits_of(statements)
            commits = sum(per_backend.values()) - idle_rate * (time.monotonic() - started)
            commits_by_process = Counter()
            for pid, v in per_backend.items():
                commits_by_process[backends.get(pid, "?")] += v
            by_process = Counter(backends.get(pid, "?") for pid, _ in statements)
            by_statement = Counter((backends.get(pid, "?"), text[:SHOWN]) for pid, text in statements)
            n = len(r.done_ms)
            cpu = {"heddle-serve": 0.0, "heddle-worker": 0.0}
            for i, p in enumerate(dep.procs):  # the API first, then the workers
                key = f"pid{p.pid}"
                cpu["heddle-serve" if i == 0 else "heddle-worker"] += cpu_after[key] - cpu_before[key]
            cpu["postgresql"] = sum(cpu_after.get(k, 0.0) - cpu_before.get(k, 0.0) for k in cpu_after
                                    if k.startswith("pg"))
            result["kinds"][kind] = {
                "runs": n, "runs_per_s": round(n / busy_s, 1), "polls_per_run": round(r.polls_per_run, 2),
                "commits_per_run": round(commits / n, 2), "statements_per_run": round(len(statements) / n, 1),
                "commits_by_process": {k: round(v / n, 2) for k, v in commits_by_process.most_common()},
                "by_process": {k: round(v / n, 1) for k, v in by_process.most_common()},
                "by_statement": [(proc, text, round(v / n, 2)) for (proc, text), v in by_statement.most_common()],
                "cpu_ms_per_run": {k: round(1000 * v / n, 1) for k, v in cpu.items()}}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=1, help="worker processes (0: one serve executes its runs)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle layout to measure")
    parser.add_argument("--top", type=int, default=25, help="statements listed per kind of run")
    parser.add_argument("--pg-log", default=PG_LOG)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.workers, args.runs, args.idle, pg_log=args.pg_log)
    if args.json:
        print(json.dumps(result))
        return
    layout = f"1 API + {args.workers} worker(s), queue" if args.workers else "1 serve, in-process executor"
    idle = result["idle"]
    print(f"layout: {layout}; idle: {idle['commits_per_s']} commits/s, {idle['cpu_percent']}% of a core "
          f"(all processes and their backends, {idle['seconds']} s); wake-ups a second: "
          + ", ".join(f"{'serve' if i == 0 else 'worker'} {w}" for i, w in enumerate(idle["wakeups_per_s"])))
    for proc, text, v in idle["statements_per_s"][:args.top]:
        print(f"  {v:>6}/s {proc:<20} {text}")
    for kind, k in result["kinds"].items():
        print(f"\n{kind}: {k['runs']} runs, {k['runs_per_s']} runs/s (one thread), {k['polls_per_run']} polls/run, "
              f"{k['commits_per_run']} commits/run, {k['statements_per_run']} statements/run")
        print("  CPU ms per run: " + ", ".join(f"{p} {v}" for p, v in k["cpu_ms_per_run"].items()))
        print("  commits per run by process (idle rate not subtracted): "
              + ", ".join(f"{p} {v}" for p, v in k["commits_by_process"].items()))
        print("  statements per run by process: " + ", ".join(f"{p} {v}" for p, v in k["by_process"].items()))
        for proc, text, v in k["by_statement"][:args.top]:
            print(f"  {v:>6} {proc:<22} {text}")


if __name__ == "__main__":
    main()
