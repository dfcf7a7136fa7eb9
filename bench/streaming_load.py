"""bench/streaming.py's load table: rounds, measurement and the printed table (see its docstring)."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import cpu_between, cpu_snapshot  # noqa: E402
from streaming_systems import PIECES, SYSTEMS, Gate, Llmock, Sample  # noqa: E402

WARM_UP_SECONDS = 2.0


def add_load_arguments(parser) -> None:
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, of {', '.join(SYSTEMS)}")
    parser.add_argument("--levels", default="10,100,300", help="concurrent conversations, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per system and level (fresh servers each)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds each conversation keeps posting")
    parser.add_argument("--arrivals", choices=("together", "spread"), default="together",
                        help="first messages all at the start (the issue's table), or spread evenly over "
                             "one reply's length (first token + pieces x chunk interval)")


async def _healthz(base_url: str | None, path: str, stop: asyncio.Event, out: list[float]) -> None:
    """GET /healthz every 0.25 s while the round runs: how the loop answers a cheap request."""
    if base_url is None:
        return
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        while not stop.is_set():
            started = time.monotonic()
            try:
                await client.get(path)
                out.append((time.monotonic() - started) * 1000)
            except httpx.HTTPError:
                pass
            try:
                await asyncio.wait_for(stop.wait(), 0.25)
            except TimeoutError:
                pass


async def _lag(stop: asyncio.Event, out: list[float]) -> None:
    """This client's own event-loop lag (a 50 ms sleep's overshoot), so a TTFT that is the
    client's own delay shows as such."""
    while not stop.is_set():
        started = time.monotonic()
        await asyncio.sleep(0.05)
        out.append((time.monotonic() - started - 0.05) * 1000)


async def _drive(system, conversations: int, duration: float, healthz: list[float],
                 on_open=None, lags: list[float] | None = None, spread: float = 0.0) -> tuple[list[Sample], float]:
    """The round's samples, and the seconds from the start of its timed part (threads opened)
    to its last run's end; `lags` gets this client's loop lag, sampled through the round;
    `spread`: the seconds over which the first messages are spread (`Gate`)."""
    out: list[Sample] = []
    stop = asyncio.Event()
    gate = Gate(conversations, duration, on_open, spread)
    probe = asyncio.create_task(_healthz(getattr(system, "base_url", None), getattr(system, "health_path", "/healthz"),
                                         stop, healthz))
    lag = asyncio.create_task(_lag(stop, [] if lags is None else lags))
    results = await asyncio.gather(*(system.conversation(i, gate, out) for i in range(conversations)),
                                   return_exceptions=True)
    wall = time.monotonic() - gate.started
    stop.set()
    await probe
    await lag
    out += [Sample(None, None, 0, f"conversation: {type(r).__name__}") for r in results if isinstance(r, Exception)]
    return out, wall


def _backend_pids(db: tuple[str, str] | None) -> list[int]:
    if db is None:
        return []
    from scale import _backends

    return asyncio.run(_backends(*db))


def measure(name: str, mock: Llmock, conversations: int, duration: float, spread: float = 0.0) -> dict:
    """One round of one system on a fresh server (warmed up by two conversations first);
    `spread`: see `Gate`."""
    with SYSTEMS[name](mock) as system:
        asyncio.run(_drive(system, 2, WARM_UP_SECONDS, []))
        pids = lambda: system.pids() + _backend_pids(system.backends())  # noqa: E731
        before = cpu_snapshot(pids())
        healthz: list[float] = []
        lags: list[float] = []
        samples, wall = asyncio.run(_drive(system, conversations, duration, healthz, lags=lags, spread=spread))
        cpu = cpu_between(before, cpu_snapshot(pids()))
    runs = [s for s in samples if not s.failed]
    messages = by_message(runs)
    row = {"system": name, "conversations": conversations, "runs": len(runs), "wall_s": round(wall, 2),
           "failed": len(samples) - len(runs), "failures": sorted({s.failed for s in samples if s.failed}),
           "ttft_ms": [round(s.ttft_ms, 1) for s in runs if s.ttft_ms is not None],
           "ttft_by_message_ms": messages,
           "ttft_later_ms": [v for values in messages[1:] for v in values],  # each conversation's opening left out
           "post_ms": [round(s.post_ms, 1) for s in runs if s.post_ms is not None],
           "healthz_ms": [round(v, 1) for v in healthz], "client_lag_ms": [round(v, 1) for v in lags],
           "runs_per_s": round(len(runs) / wall, 2), "cpu_s": round(cpu, 3),
           "load": os.getloadavg()[0]}
    print(json.dumps({k: v for k, v in row.items() if not k.endswith("_ms")} | {
        "ttft_median_ms": _pct(row["ttft_ms"], 50)}), file=sys.stderr, flush=True)
    return row


def grouped(pairs) -> list[list[float]]:
    """Values grouped by an index from 0: `(index, value)` pairs -> a list per index, in order
    (an index nothing has is an empty list)."""
    out: list[list[float]] = []
    for index, value in pairs:
        out.extend([] for _ in range(index + 1 - len(out)))
        out[index].append(value)
    return out


def by_message(samples) -> list[list[float]]:
    """The first tokens (ms) of each conversation's 1st, 2nd, ... message of the round. Together,
    the 1st messages all leave at once and the later ones spread out as replies end at different
    times, so a round moves from a burst towards a steady load (docs/operations.md, "Part
    fourteen")."""
    return grouped((s.index, round(s.ttft_ms, 1)) for s in samples if s.ttft_ms is not None)


def medians_by_message(rows: list[dict]) -> list[float | None]:
    """The median first token of the n-th message over the rounds, n from 1 (`by_message`)."""
    pooled = grouped((n, v) for row in rows for n, values in enumerate(row["ttft_by_message_ms"]) for v in values)
    return [_pct(values, 50) for values in pooled]


def spread_seconds(arrivals: str, first_token_ms: float, chunk_ms: float) -> float:
    """Over how long the first messages are spread (`Gate`): none together; spread, over one
    reply's length, so that each moment has as many conversations starting a run as the load's
    average, where together all of them start within the same instant."""
    return (first_token_ms + PIECES * chunk_ms) / 1000 if arrivals == "spread" else 0.0


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))], 1)


def _paired_ratios(rows: list[dict], direct: list[dict], key: str = "ttft_ms") -> list[float]:
    """Each round's TTFT median over direct's in the same round. Rounds interleave the systems,
    so a ratio within a round cancels much of what the machine does from one minute to the next;
    a round's own median moves by about 15% (docs/operations.md, "Part nine"). `key`
    "ttft_later_ms": the messages after each conversation's first of the round."""
    ratios = []
    for row, base in zip(rows, direct, strict=True):
        mine, theirs = _pct(row[key], 50), _pct(base[key], 50)
        if mine is not None and theirs:
            ratios.append(round(mine / theirs, 2))
    return ratios


def summarise(rows: list[dict]) -> dict:
    """The rounds of one system at one level: pooled percentiles, medians of per-round rates."""
    ttft = [v for r in rows for v in r["ttft_ms"]]
    runs = sum(r["runs"] for r in rows)
    cpu = sum(r["cpu_s"] for r in rows)
    server = rows[0]["system"] not in ("direct", "raw")  # the model straight from this client: no server
    return {"system": rows[0]["system"], "conversations": rows[0]["conversations"], "rounds": len(rows),
            "runs": runs, "failed": sum(r["failed"] for r in rows),
            "failures": sorted({f for r in rows for f in r["failures"]}),
            "ttft_median_ms": _pct(ttft, 50), "ttft_p95_ms": _pct(ttft, 95),
            "ttft_later_median_ms": _pct([v for r in rows for v in r["ttft_later_ms"]], 50),
            "ttft_median_by_message_ms": medians_by_message(rows),
            "post_median_ms": _pct([v for r in rows for v in r["post_ms"]], 50),
            "healthz_median_ms": _pct([v for r in rows for v in r["healthz_ms"]], 50),
            "healthz_p95_ms": _pct([v for r in rows for v in r["healthz_ms"]], 95),
            "client_lag_p95_ms": _pct([v for r in rows for v in r["client_lag_ms"]], 95),
            "runs_per_s": round(statistics.median(r["runs_per_s"] for r in rows), 2),
            "cpu_ms_per_run": round(1000 * cpu / runs, 1) if runs and server else None,
            "cpu_ms_per_chunk": round(1000 * cpu / runs / PIECES, 3) if runs and server else None}


def load_table(args) -> None:
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        raise SystemExit(f"unknown systems {sorted(unknown)}; expected some of {', '.join(SYSTEMS)}")
    levels = [int(n) for n in args.levels.split(",")]
    load = [os.getloadavg()]
    table = []
    spread = spread_seconds(args.arrivals, args.first_token_ms, args.chunk_ms)
    with Llmock(args.first_token_ms, args.chunk_ms) as mock:
        for conversations in levels:
            rows: dict[str, list[dict]] = {s: [] for s in systems}
            for _ in range(args.rounds):  # interleaved: every system once per round
                for name in systems:
                    rows[name].append(measure(name, mock, conversations, args.duration, spread))
            level = [summarise(rows[name]) for name in systems]
            direct = next((r for r in level if r["system"] == "direct"), None)
            for r in level:
                if direct:
                    r["ttft_ratio_by_round"] = _paired_ratios(rows[r["system"]], rows["direct"])
                    r["later_ratio_by_round"] = _paired_ratios(rows[r["system"]], rows["direct"], "ttft_later_ms")
                if direct and direct["ttft_median_ms"] is not None and r["ttft_median_ms"] is not None:
                    r["overhead_ms"] = round(r["ttft_median_ms"] - direct["ttft_median_ms"], 1)
                    r["ttft_ratio"] = round(r["ttft_median_ms"] / direct["ttft_median_ms"], 2)
                    r["runs_ratio"] = round(r["runs_per_s"] / direct["runs_per_s"], 2) if direct["runs_per_s"] else None
            table += level
    load.append(os.getloadavg())
    python, eager = platform.python_version(), os.environ.get("HEDDLE_EAGER_TASKS")  # what Heddle ran on
    if args.json:
        print(json.dumps({"benchmark": "streaming-load", "python": python, "eager_tasks": eager, "load_average": load,
                          "arrivals": args.arrivals, "first_token_ms": args.first_token_ms,
                          "chunk_ms": args.chunk_ms, "duration_s": args.duration, "results": table}))
        return
    print(f"load average (1/5/15 min) at start {'/'.join(f'{v:.1f}' for v in load[0])}, "
          f"at end {'/'.join(f'{v:.1f}' for v in load[1])}; {os.cpu_count()} CPUs; Heddle on Python "
          f"{python}" + (f", HEDDLE_EAGER_TASKS={eager}" if eager else "") + f"; arrivals {args.arrivals}"
          + (f" (over {spread:.1f} s)" if spread else ""))
    print(f"{'conv':>4} {'system':<12} {'TTFT med/p95 ms':>17} {'over direct':>11} {'x direct':>8} {'runs/s':>7} "
          f"{'CPU/run ms':>10} {'CPU/chunk ms':>12} {'POST med':>8} {'healthz med/p95':>16} {'client lag p95':>14} "
          f"{'failed':>6}")
    for r in table:
        def f(key, fmt="{:.0f}", r=r):
            return "-" if r.get(key) is None else fmt.format(r[key])
        print(f"{r['conversations']:>4} {r['system']:<12} {f('ttft_median_ms') + ' / ' + f('ttft_p95_ms'):>17} "
              f"{f('overhead_ms'):>11} {f('ttft_ratio', '{:.2f}'):>8} {f('runs_per_s', '{:.2f}'):>7} "
              f"{f('cpu_ms_per_run'):>10} {f('cpu_ms_per_chunk', '{:.3f}'):>12} {f('post_median_ms'):>8} "
              f"{f('healthz_median_ms') + ' / ' + f('healthz_p95_ms'):>16} {f('client_lag_p95_ms'):>14} "
              f"{r['failed']:>6}")
    for r in table:
        spread = r.get("ttft_ratio_by_round") or []
        if len(spread) > 1 and r["system"] != "direct":
            print(f"{r['conversations']:>4} {r['system']:<12} x direct by round: {min(spread):.2f}-{max(spread):.2f} "
                  f"(median {statistics.median(spread):.2f}, {len(spread)} rounds)")
    for r in table:  # without each conversation's first message (docs/operations.md, "Part thirteen")
        later = r.get("later_ratio_by_round") or []
        print(f"{r['conversations']:>4} {r['system']:<12} later messages: TTFT median "
              f"{'-' if r['ttft_later_median_ms'] is None else round(r['ttft_later_median_ms'])} ms"
              + (f", x direct by round {min(later):.2f}-{max(later):.2f} (median {statistics.median(later):.2f})"
                 if later and r["system"] != "direct" else ""))
    for r in table:  # a round from its burst towards a steady load (docs/operations.md, "Part fourteen")
        peer = next((d for d in table if d["system"] == "direct" and d["conversations"] == r["conversations"]), None)
        base = (peer or {}).get("ttft_median_by_message_ms") or []
        cells = []
        for n, v in enumerate(r.get("ttft_median_by_message_ms") or [], start=1):
            cell = f"{n}: {'-' if v is None else round(v)}"
            if r["system"] != "direct" and v is not None and n <= len(base) and base[n - 1]:
                cell += f" ({v / base[n - 1]:.2f}x)"
            cells.append(cell)
        print(f"{r['conversations']:>4} {r['system']:<12} by message of the round, median ms: {', '.join(cells)}")
    print("TTFT: message sent -> first delta read. CPU: every process of the system (PostgreSQL's backends "
          f"included) over the round, per run and per chunk ({PIECES} a reply). Client lag: this "
          "client's own event loop (a 50 ms sleep's overshoot); a TTFT beside a high one is partly the client's. "
          "failures: "
          + "; ".join(f"{r['system']}@{r['conversations']}: {r['failures']}" for r in table if r["failures"]))
