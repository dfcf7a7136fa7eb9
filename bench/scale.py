"""Runs at scale, side by side in one run: the embedded default, the PostgreSQL layouts, Aegra.

Every system is driven by the same client (bench/run_driver.py: each conversation posts a
message and polls the run until done, 5 ms after posting then 1.5x longer each time, at most
50 ms apart) at 10 and 100 concurrent conversations, scripted runs (the reply streams word by
word). Layouts:

* embedded: one `heddle serve` on SQLite (the default);
* PostgreSQL (bench/scale_queue.py `Deployment`, a fresh database each, the PostgreSQL event
  bus): one `heddle serve` executing its own runs (in-process), 1 API + 1 worker, 1 API + 2
  workers, 2 APIs + 2 workers (conversations spread over the APIs, as behind a balancer), also
  with runs that call a hosted tool answering after 50 ms (`tool50`, 100 conversations);
* Aegra 0.11 (bench/aegra.py: installed into its own venv, its own database on the same
  PostgreSQL, a one-node echo graph), driven through the Agent Protocol like LangGraph.

Per round: runs/s, the client's done median, polls per run, and CPU per run summed over every
process of the system (the server processes with their children, and, on PostgreSQL, the
database's backends serving it; PostgreSQL's shared background processes are left out). Then
the ratios the issue asks for, and the I/O-bound scaling curve: runs whose tool waits 200 ms,
1 API + workers of growing total concurrency (workers x --concurrency), conversations twice
the executor's concurrency, so the executor is always full.

    python bench/scale.py [--runs 24] [--rounds 5] [--no-aegra] [--no-curve] [--only-embedded]
                          [--layouts none|'in-process,2 API'] [--no-tool] [--json]

The embedded default and PostgreSQL 1 API + 1 worker (the pair the issue's ratios compare) run
side by side: both up at once, their rounds interleaved `--rounds` times per level, each row the
median of its rounds (single rounds minutes apart differed by a third on this shared machine).
The other layouts and Aegra get one round per level.

The machine's load average is printed at the start and end: figures are only comparable
within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import sys
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).parent))
from common import Server, cpu_between, cpu_snapshot, create_agent  # noqa: E402
from run_driver import heddle_calls, run_round, summarise  # noqa: E402

AGENT = "name: bench\nmodel_class: scripted\ninstructions: Be brief.\ntools: []\n"
THREADS = (1, 10, 100)  # bench/vs_langgraph.py's levels
LEVELS = (10, 100)
PG_LAYOUTS = (("in-process (1 serve, PG)", 1, 0), ("1 API + 1 worker (PG)", 1, 1),
              ("1 API + 2 workers (PG)", 1, 2), ("2 API + 2 workers (PG)", 2, 2))
CURVE = ((1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (1, 32), (1, 64), (2, 32))  # (workers, concurrency)


def scripted_agent(db_url: str, workspace: str) -> str:
    return create_agent(db_url, workspace, AGENT)


def runs_per_thread(concurrency: int, runs: int) -> int:
    """Fewer runs per conversation when many run at once, so every level takes similar time."""
    return max(2, runs * 10 // (concurrency + 9))


async def _backends(admin_dsn: str, dbname: str) -> list[int]:
    conn = await asyncpg.connect(admin_dsn)
    try:
        return [r["pid"] for r in await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", dbname)]
    finally:
        await conn.close()


def progress(row: dict) -> None:
    """Each row on stderr as it is measured (the table comes at the end, on stdout)."""
    print(json.dumps(row), file=sys.stderr, flush=True)


def measured_round(label: str, base_url, threads: int, runs: int, calls, pids: list[int],
                   db: tuple[str, str] | None = None) -> dict:
    """One round of `runs` runs per conversation, with the CPU of `pids` (and of the database
    `db` = (admin DSN, name)'s backends) over it."""
    def processes() -> list[int]:
        return pids + (asyncio.run(_backends(*db)) if db else [])

    before = cpu_snapshot(processes())
    r = asyncio.run(run_round(label, base_url, threads, runs, *calls))
    cpu = cpu_between(before, cpu_snapshot(processes()))
    row = {"layout": label, "threads": threads, **summarise([r]),
           "cpu_ms_per_run": round(1000 * cpu / max(1, len(r.done_ms)), 1)}
    progress(row)
    return row


class EmbeddedSystem:
    """One `heddle serve` process on SQLite (the default), warmed up, measured round by round."""

    label = "embedded (1 serve, SQLite)"

    def __enter__(self) -> EmbeddedSystem:
        self.server = Server().__enter__()
        ws, self.secret = self.server.tenant()
        self.agent = scripted_agent(self.server.db_url, ws)
        asyncio.run(run_round("warm-up", self.server.base_url, 4, 2, *heddle_calls(self.secret, self.agent, "warm")))
        self.rounds = 0
        return self

    def __exit__(self, *exc) -> None:
        self.server.__exit__(*exc)

    def round(self, kind: str, threads: int, runs: int) -> dict:
        assert kind == "scripted"
        self.rounds += 1
        return {"kind": kind, **measured_round(
            self.label, self.server.base_url, threads, runs,
            heddle_calls(self.secret, self.agent, f"scale{threads}r{self.rounds}"), [self.server.proc.pid])}


class PostgresSystem:
    """A PostgreSQL layout (bench/scale_queue.py `Deployment`) with its tool host, warmed up."""

    def __init__(self, label: str, apis: int, workers: int):
        self.label, self.apis, self.workers = label, apis, workers

    def __enter__(self) -> PostgresSystem:
        from scale_queue import PG_ADMIN, Deployment, ToolHost, _calls

        self.host = ToolHost().__enter__()
        try:
            self.dep = Deployment(self.workers, 16, apis=self.apis).__enter__()
        except BaseException:
            self.host.__exit__(None, None, None)
            raise
        self.secret, self.agent = self.dep.seed(self.host)
        self.db = (PG_ADMIN, self.dep.name)
        self._calls = _calls
        asyncio.run(run_round("warm-up", self.dep.base_urls, 4, 2, *_calls(self.secret, self.agent, "warm", "hello")))
        self.rounds = 0
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.dep.__exit__(*exc)
        finally:
            self.host.__exit__(*exc)

    def round(self, kind: str, threads: int, runs: int) -> dict:
        self.rounds += 1
        from scale_queue import MESSAGES

        message = MESSAGES[kind]
        before = self.host.calls
        row = measured_round(self.label, self.dep.base_urls, threads, runs,
                             self._calls(self.secret, self.agent, f"{kind}{threads}r{self.rounds}", message),
                             [p.pid for p in self.dep.procs], self.db)
        if kind == "tool50":
            assert self.host.calls - before == row["runs"], "each run calls the tool exactly once"
        return {"kind": kind, **row}


def median_row(rows: list[dict]) -> dict:
    """Rounds of one system and level as one row: the median of each figure over the rounds."""
    if len(rows) == 1:
        return rows[0]
    out = dict(rows[0])
    for key in ("done_median_ms", "runs_per_s", "polls_per_run", "cpu_ms_per_run"):
        out[key] = round(statistics.median(r[key] for r in rows), 2)
    out["runs"] = sum(r["runs"] for r in rows)
    out["rounds"] = len(rows)
    return out


def side_by_side(runs: int, rounds: int, levels=LEVELS) -> list[dict]:
    """The embedded default and PostgreSQL 1 API + 1 worker, both up at once, their rounds
    interleaved (embedded, PostgreSQL, embedded, ...) `rounds` times per level, so that both see
    the same machine; each row is the median over its rounds."""
    results = []
    with EmbeddedSystem() as emb, PostgresSystem(*PG_LAYOUTS[1]) as pg:
        for threads in levels:
            got: dict[str, list[dict]] = {"emb": [], "pg": []}
            for _ in range(rounds):
                got["emb"].append(emb.round("scripted", threads, runs_per_thread(threads, runs)))
                got["pg"].append(pg.round("scripted", threads, runs_per_thread(threads, runs)))
            results += [median_row(got["emb"]), median_row(got["pg"])]
        results.append(pg.round("tool50", 100, runs_per_thread(100, runs)))
    return results


def embedded(runs: int, levels=LEVELS) -> list[dict]:
    """The embedded default alone, one round per level."""
    with EmbeddedSystem() as emb:
        return [emb.round("scripted", threads, runs_per_thread(threads, runs)) for threads in levels]


def postgres_layout(label: str, apis: int, workers: int, runs: int, levels=LEVELS, tool_level: int = 100) -> list[dict]:
    with PostgresSystem(label, apis, workers) as system:
        rows = [system.round("scripted", threads, runs_per_thread(threads, runs)) for threads in levels]
        if tool_level:
            rows.append(system.round("tool50", tool_level, runs_per_thread(tool_level, runs)))
    return rows


def aegra(runs: int, levels=LEVELS) -> list[dict]:
    from aegra import AegraServer
    from scale_queue import PG_ADMIN, _admin
    from vs_langgraph import langgraph_calls

    name = f"aegra_bench_{secrets.token_hex(5)}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    results = []
    try:
        with AegraServer(f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}") as server:
            asyncio.run(run_round("warm-up", server.base_url, 4, 2, *langgraph_calls()))
            for threads in levels:
                results.append({"kind": "scripted", **measured_round(
                    "Aegra 0.11 (PG)", server.base_url, threads, runs_per_thread(threads, runs), langgraph_calls(),
                    server.pids, (PG_ADMIN, name))})
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    return results


def io_curve(runs: int = 3) -> list[dict]:
    """Runs whose hosted tool waits 200 ms: runs/s against the executor's total concurrency."""
    from scale_queue import MESSAGES, PG_ADMIN, Deployment, ToolHost, _calls

    results = []
    for workers, concurrency in CURVE:
        try:
            with ToolHost() as host, Deployment(workers, concurrency) as dep:
                secret, agent = dep.seed(host)
                threads = 2 * workers * concurrency
                row = measured_round(f"{workers} x {concurrency}", dep.base_url, threads, runs,
                                     _calls(secret, agent, "io", MESSAGES["tool200"]),
                                     [p.pid for p in dep.procs], (PG_ADMIN, dep.name))
        except Exception as exc:  # reported, and the curve goes on
            print(f"curve point {workers} x {concurrency}: not measured ({exc})", file=sys.stderr)
            continue
        results.append({"kind": "tool200", "workers": workers, "concurrency": concurrency,
                        "total": workers * concurrency, **row})
    return results


def _find(results, layout_prefix: str, kind: str, threads: int) -> dict | None:
    return next((r for r in results if r["layout"].startswith(layout_prefix) and r["kind"] == kind
                 and r["threads"] == threads), None)


def ratios(results: list[dict]) -> list[tuple[str, float, str]]:
    """(what, value, target) for the issue's goals, PostgreSQL 1 API + 1 worker against the rest."""
    out = []
    for threads in LEVELS:
        pg, emb, ae = (_find(results, p, "scripted", threads) for p in ("1 API + 1 worker", "embedded", "Aegra"))
        if pg and emb:
            out.append((f"PG 1+1 / embedded runs/s, {threads} threads", pg["runs_per_s"] / emb["runs_per_s"], ">= 0.5"))
            out.append((f"PG 1+1 / embedded CPU per run, {threads} threads",
                        pg["cpu_ms_per_run"] / emb["cpu_ms_per_run"], "<= 3"))
        if pg and ae:
            out.append((f"PG 1+1 / Aegra runs/s, {threads} threads", pg["runs_per_s"] / ae["runs_per_s"], "> 1"))
            out.append((f"Aegra / PG 1+1 done median, {threads} threads",
                        ae["done_median_ms"] / pg["done_median_ms"], "> 1"))
    return [(what, round(v, 2), target) for what, v, target in out]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # 24 x 5: at 12 x 3 a round of 10 conversations was 60 runs, under a second for the embedded
    # default, and its ratios to PostgreSQL swung by a third from one run of the bench to the next.
    parser.add_argument("--runs", type=int, default=24, help="runs per conversation at 1 (fewer at more)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="interleaved rounds of the embedded default and PG 1 API + 1 worker per level (medians)")
    parser.add_argument("--no-aegra", action="store_true")
    parser.add_argument("--no-curve", action="store_true", help="skip the I/O-bound scaling curve")
    parser.add_argument("--only-embedded", action="store_true", help="the embedded default at 1, 10 and 100 threads")
    parser.add_argument("--layouts", default="",
                        help="comma-separated prefixes of the other PostgreSQL layouts to run (default: all; "
                             "'none': only the side-by-side pair), e.g. 'in-process,2 API'")
    parser.add_argument("--no-tool", action="store_true", help="skip the tool50 rounds of the PostgreSQL layouts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    wanted = [p.strip() for p in args.layouts.split(",") if p.strip()]
    load = [os.getloadavg()]
    if args.only_embedded:
        results, curve = embedded(args.runs, THREADS), []
    else:
        results = side_by_side(args.runs, args.rounds)
        for label, apis, workers in PG_LAYOUTS:
            if label == PG_LAYOUTS[1][0] or (wanted and not any(label.startswith(p) for p in wanted)):
                continue  # 1 API + 1 worker: measured side by side with the embedded default
            try:
                results += postgres_layout(label, apis, workers, args.runs, tool_level=0 if args.no_tool else 100)
            except Exception as exc:  # reported; the rest of the table stands
                print(f"{label}: not (fully) measured ({type(exc).__name__}: {exc})", file=sys.stderr)
        if not args.no_aegra:
            try:
                results += aegra(args.runs)
            except Exception as exc:  # reported, not hidden: the rest of the table stands
                print(f"Aegra: not measured ({type(exc).__name__}: {exc})", file=sys.stderr)
        curve = [] if args.no_curve else io_curve()
    load.append(os.getloadavg())
    if args.json:
        print(json.dumps({"benchmark": "scale", "load_average": load, "results": results, "curve": curve,
                          "ratios": ratios(results)}))
        return
    print(f"load average (1/5/15 min) at start {load[0][0]:.1f}/{load[0][1]:.1f}/{load[0][2]:.1f}, "
          f"at end {load[1][0]:.1f}/{load[1][1]:.1f}/{load[1][2]:.1f}; 2 vCPUs" if os.cpu_count() == 2 else
          f"load average at start {load[0]}, at end {load[1]}; {os.cpu_count()} CPUs")
    print(f"{'layout':<28} {'kind':>8} {'threads':>7} {'runs':>5} {'done median':>12} {'runs/s':>7} "
          f"{'polls/run':>9} {'CPU ms/run':>10}")
    for r in results:
        print(f"{r['layout']:<28} {r['kind']:>8} {r['threads']:>7} {r['runs']:>5} {r['done_median_ms']:>10.1f}ms "
              f"{r['runs_per_s']:>7.1f} {r['polls_per_run']:>9.2f} {r['cpu_ms_per_run']:>10.1f}")
    print("done median: client-measured, message POST -> the poll that saw the run done. CPU: every process of "
          "the system, PostgreSQL's backends included")
    for what, value, target in ratios(results):
        print(f"  {what:<48} {value:>6.2f}  (goal {target})")
    if curve:
        print("\nI/O-bound runs (hosted tool waits 200 ms), 1 API + workers x concurrency, 2 conversations per slot:")
        print(f"{'workers x concurrency':>21} {'total':>5} {'runs/s':>7} {'ideal':>6} {'done median':>12} "
              f"{'CPU ms/run':>10}")
        for c in curve:
            print(f"{c['layout']:>21} {c['total']:>5} {c['runs_per_s']:>7.1f} {c['total'] / 0.2:>6.0f} "
                  f"{c['done_median_ms']:>10.1f}ms {c['cpu_ms_per_run']:>10.1f}")
        print("ideal: total concurrency / 0.2 s (every slot always waiting on the tool)")


if __name__ == "__main__":
    main()
