"""Where a streamed chunk's CPU goes: py-spy over Heddle's processes under bench/streaming.py's load.

Starts one system (embedded or PostgreSQL 1 API + 1 worker) with llmock as the model, warms it
up, drives `--conversations` streaming conversations for `--duration` seconds and meanwhile
samples every server process with py-spy (`pip install py-spy`; it needs ptrace rights over its
children). Each stack is charged to one area: the innermost frame that names an area in
`AREAS` (checked leaf first), so "SSE frames" holds the CPU of `sse.frame` and what it calls.
Also the database's work per chunk: on PostgreSQL, commits and rows written (pg_stat_database
of the bench's database); on SQLite, the stored rows of deltas per run (each a write
transaction of the delta writer, or the turn's own).

    python bench/streaming_profile.py [--system embedded|postgres] [--conversations 100]
                                      [--duration 15] [--top 25] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from streaming_load import WARM_UP_SECONDS, _drive  # noqa: E402
from streaming_systems import PIECES, SYSTEMS, Llmock  # noqa: E402

# (area, substrings of a frame "function (file:line)"), checked from the leaf upwards.
AREAS = (
    ("JSON encode/decode", ("json/encoder", "json/decoder", "json/__init__", "orjson")),
    ("pydantic (SDK chunk models)", ("pydantic",)),
    ("SSE: frames and the stream loop", ("loom/sse.py",)),
    ("realtime hub / bus relay", ("heddle/realtime/",)),
    ("delta log: writer, signals, log reads", ("loom/delta_writer.py", "loom/event_signals.py", "loom/event_log.py",
                                              "loom/event_outbox.py")),
    ("DeltaStream (deltas.py)", ("loom/deltas.py",)),
    ("aiosqlite / sqlite3", ("aiosqlite", "sqlite3")),
    ("asyncpg", ("asyncpg",)),
    ("SQLAlchemy", ("sqlalchemy",)),
    ("openai SDK / httpx reading the model's stream", ("openai/", "httpx", "httpcore", "anyio")),
    ("provider (providers/)", ("loom/providers/",)),
    ("uvicorn / h11 / starlette (HTTP)", ("uvicorn", "h11", "starlette", "fastapi")),
    ("procrastinate (queue)", ("procrastinate",)),
    ("run engine and unit of work", ("heddle/loom/",)),
    ("other heddle", ("heddle/",)),
    ("asyncio event loop", ("asyncio/",)),
)


def area_of(stack: list[str]) -> str:
    for frame in reversed(stack):
        for area, needles in AREAS:
            if any(n in frame for n in needles):
                return area
    return "other (interpreter, stdlib)"


def profile(pid: int, seconds: float, out: Path) -> subprocess.Popen:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return subprocess.Popen([spy, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200",
                             "--format", "raw", "--nonblocking", "--threads", "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def read_raw(path: Path) -> tuple[Counter, Counter, Counter]:
    """(samples per area, inclusive samples per heddle function, samples per thread) of a py-spy
    raw file recorded with --threads (each stack's first frame names its thread)."""
    areas: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    if not path.exists():
        return areas, functions, threads
    for line in path.read_text().splitlines():
        stacks, _, count = line.rpartition(" ")
        frames = [f for f in stacks.split(";") if f]
        if not frames or not count.isdigit():
            continue
        if any("(idle)" in f or "select (selectors.py" in f or "_worker (concurrent" in f
               or "wait (threading.py" in f for f in frames[-2:]):
            continue  # an idle thread waiting, not CPU
        threads[frames[0].split(" (")[0] + ": " + (frames[1].split(" (")[0] if len(frames) > 1 else "")] += int(count)
        frames = frames[1:]
        areas[area_of(frames)] += int(count)
        for name in {f.split(" (")[0] + " (" + f.split("/")[-1] for f in frames if "heddle" in f}:
            functions[name] += int(count)
    return areas, functions, threads


async def _pg_counters(system) -> dict[str, int]:
    import asyncpg
    from scale_queue import PG_ADMIN

    conn = await asyncpg.connect(PG_ADMIN)
    try:
        row = await conn.fetchrow("SELECT xact_commit, tup_inserted, tup_updated, tup_returned FROM pg_stat_database "
                                  "WHERE datname = $1", system.dep.name)
        return dict(row)
    finally:
        await conn.close()


def _sqlite_delta_rows(system) -> tuple[int, int]:
    path = system.server.db_url.split("///", 1)[1]
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT count(*) FROM run_events WHERE event IN ('message.delta', 'message.deltas')"
                          ).fetchone()[0]
        runs = db.execute("SELECT count(*) FROM runs WHERE state = 'closed'").fetchone()[0]
    return rows, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("embedded", "postgres"), default="embedded")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--keep", help="a directory to keep py-spy's raw files in")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict = {"system": args.system, "conversations": args.conversations, "load": [os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp, Llmock(300, 20) as mock, SYSTEMS[args.system](mock) as system:
        asyncio.run(_drive(system, 2, WARM_UP_SECONDS, []))
        counters = asyncio.run(_pg_counters(system)) if args.system == "postgres" else None
        spies: dict[int, subprocess.Popen] = {}

        def start_spies() -> None:  # when every conversation has its thread: the timed part
            spies.update({pid: profile(pid, args.duration, Path(tmp) / f"{pid}.txt") for pid in system.pids()})

        samples, wall = asyncio.run(_drive(system, args.conversations, args.duration, [], start_spies))
        for spy in spies.values():
            spy.wait(60)
        runs = sum(1 for s in samples if not s.failed)
        result.update(runs=runs, wall_s=round(wall, 1), processes={},
                      failures=sorted({s.failed for s in samples if s.failed}))
        for pid in spies:
            if args.keep:
                shutil.copy(Path(tmp) / f"{pid}.txt", Path(args.keep) / f"{args.system}-{pid}.txt")
            areas, functions, threads = read_raw(Path(tmp) / f"{pid}.txt")
            total = sum(areas.values()) or 1
            result["processes"][pid] = {
                "samples": total, "threads": [(t, round(100 * n / total, 1)) for t, n in threads.most_common(6)],
                "areas": [(a, round(100 * n / total, 1)) for a, n in areas.most_common()],
                "functions": [(f, round(100 * n / total, 1)) for f, n in functions.most_common(args.top)]}
        if counters is not None:
            after = asyncio.run(_pg_counters(system))
            chunks = max(1, runs * PIECES)
            result["database_per_chunk"] = {k: round((after[k] - counters[k]) / chunks, 3) for k in counters}
        else:
            rows, closed = _sqlite_delta_rows(system)
            result["delta_rows_per_run"] = round(rows / max(1, closed), 2)
    result["load"].append(os.getloadavg())
    if args.json:
        print(json.dumps(result))
        return
    print(f"{args.system}, {args.conversations} conversations, {result['runs']} runs in {result['wall_s']} s; "
          f"load {result['load'][0][0]:.1f} -> {result['load'][1][0]:.1f}; failures: {result['failures']}")
    for pid, p in result["processes"].items():
        print(f"\nprocess {pid}: {p['samples']} samples (CPU, idle waits left out)")
        print("  by thread: " + ", ".join(f"{t} {share}%" for t, share in p["threads"]))
        for area, share in p["areas"]:
            print(f"  {share:>5.1f}%  {area}")
        print("  inclusive, heddle functions:")
        for name, share in p["functions"]:
            print(f"  {share:>5.1f}%  {name}")
    for key in ("database_per_chunk", "delta_rows_per_run"):
        if key in result:
            print(f"{key}: {result[key]}")


if __name__ == "__main__":
    main()
