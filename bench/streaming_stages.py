"""Where a message's first token waits inside the embedded server, stage by stage.

Drives bench/streaming.py's load (llmock as the model, 300 ms to the first piece; N
conversations sending one message after another, `--arrivals together|spread`) against one
embedded `heddle serve` run under bench/stage_clock.py, which timestamps each stage of each
message in the server. Prints, per stage, the median and p90 in milliseconds, for every
message, for each conversation's first message of the round (when most of the server's model
connections are opened) and for the later ones:

    POST read -> its task starts     uvicorn's task for the request waiting for its first turn
    POST arrival -> 202 sent         the request's own work, from the middleware on
    202 sent -> run task starts      the run's task waiting for its first turn of the loop
    run task -> SDK call             the run's first step: its reads, the request built
    SDK call -> body written         aiohttp's body writer (a task of its own on Python 3.11)
    body written -> headers          the model server's answer and the read of its headers
    headers -> first piece           the model's 300 ms, and the read of the first piece
    POST arrival -> first piece      all of the above
    first piece -> SSE frame         the piece stored and handed to the run's stream
    POST arrival -> SSE frame        all of the above: the server's share of the first token
    202 sent -> stream opened        the client's GET .../events reaching the server

    python bench/streaming_stages.py [--conversations 100] [--duration 20] [--arrivals together]
                                     [--json]

It also prints the client's own share (sending the POST until the server reads its head, the
SSE frame until the client reads it; the client's samples joined to the server's rows by run),
the client's first token and each stage by message of the round, and each wave of the round (its POSTs in
arrival order, a conversation each): how far apart they arrived and how long they took to the
first SSE frame. Findings: docs/operations.md, "Part thirteen" to "Part fifteen".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from streaming_load import WARM_UP_SECONDS, _drive, _pct, by_message, grouped, spread_seconds  # noqa: E402
from streaming_systems import Embedded, Llmock  # noqa: E402

CLIENT_LABEL = "the client's first token"
FIRST_TOKEN_MS, CHUNK_MS = 300, 20  # the model, as bench/streaming.py's defaults

STAGES = (
    ("POST read -> its task starts", "read", "arrived"),
    ("POST arrival -> 202 sent", "arrived", "answered"),
    ("202 sent -> run task starts", "answered", "started"),
    ("run task -> SDK call", "started", "called"),
    ("SDK call -> body written", "called", "body"),
    ("body written -> headers", "body", "headers"),
    ("headers -> first piece", "headers", "first"),
    ("POST arrival -> first piece", "arrived", "first"),
    ("first piece -> SSE frame", "first", "sent"),
    ("POST arrival -> SSE frame", "arrived", "sent"),
    ("202 sent -> stream opened", "answered", "stream"),
)


def runs_of(rows: list[list], since: float = 0.0) -> tuple[dict[str, dict[str, float]], list[float]]:
    """Each run's stage times (by run id) from stage_clock's rows, and the new connections' times
    to connect, in ms; only what happened from `since` on (the round, not its warm-up)."""
    runs: dict[str, dict[str, float]] = {}
    connects = []
    for kind, run_id, *times in rows:
        if times[0] < since:
            continue
        if kind == "connection":
            connects.append((times[1] - times[0]) * 1000)
            continue
        run = runs.setdefault(run_id, {})
        if kind == "posted":
            run["arrived"], run["answered"] = times[:2]
            run["read"] = times[2] if len(times) > 2 else times[0]
        elif kind == "model":
            run["called"] = times[0]
            if times[1] is not None:
                run["first"] = times[1]
        else:  # started, headers, body, stream, sent: the first of each (a retried model call has more)
            run.setdefault(kind, times[0])
    return runs, connects


def waves(runs: dict[str, dict[str, float]], conversations: int) -> list[list[str]]:
    """The round's POSTs in arrival order, `conversations` at a time: the first wave is each
    conversation's first message of the round (its second comes a whole reply after its first,
    after every conversation's first, in either arrival shape); later waves approximate each
    conversation's n-th message as the conversations drift apart."""
    posted = [run_id for _, run_id in sorted((run["arrived"], run_id) for run_id, run in runs.items()
                                             if "arrived" in run)]
    return [posted[i:i + conversations] for i in range(0, len(posted), conversations)]


def openings(runs: dict[str, dict[str, float]], conversations: int) -> set[str]:
    """The runs of each conversation's first message of the round (the first of `waves`)."""
    first = waves(runs, conversations)
    return set(first[0]) if first else set()


def by_wave(runs: dict[str, dict[str, float]], conversations: int) -> list[dict[str, float | None]]:
    """Per wave (`waves`): how far apart its POSTs arrived (p10 to p90, ms) and its median
    POST arrival -> SSE frame (ms). Together, the first wave arrives in an instant and the later
    ones spread out, so a round goes from a burst towards a steady load."""
    out = []
    for wave in waves(runs, conversations):
        arrived = [runs[r]["arrived"] * 1000 for r in wave]
        served = [(runs[r]["sent"] - runs[r]["arrived"]) * 1000 for r in wave if "sent" in runs[r]]
        p10, p90 = _pct(arrived, 10), _pct(arrived, 90)
        out.append({"posts": len(wave), "arrival_spread_ms": round(p90 - p10, 1), "to_sse_frame_ms": _pct(served, 50)})
    return out


def stages(runs: list[dict[str, float]]) -> dict[str, dict[str, float | None]]:
    """Median and p90 (ms) of each stage over the runs that have both of its ends."""
    out = {}
    for label, start, end in STAGES:
        spans = [(run[end] - run[start]) * 1000 for run in runs if start in run and end in run]
        out[label] = {"median": _pct(spans, 50), "p90": _pct(spans, 90), "n": len(spans)}
    return out


def client_stages(samples, runs: dict[str, dict[str, float]]) -> dict[str, dict[str, float | None]]:
    """The client's share of each message's first token, by joining its samples to the server's
    rows (one clock: `time.monotonic()` is the machine's): from sending the POST to the server's
    reading its head, and from the server's SSE frame to the client's reading it. Median and p90
    (ms) for all messages, then by message of the round (n from 1)."""
    sent_to_read, lags = [], []  # lags: (message index, SSE frame -> client read)
    for s in samples:
        run = runs.get(s.run_id or "")
        if s.failed or run is None or s.started is None:
            continue
        sent_to_read.append((run["read"] - s.started) * 1000)
        if s.first_at is not None and "sent" in run:
            lags.append((s.index, (s.first_at - run["sent"]) * 1000))
    frame_to_client = [lag for _, lag in lags]
    return {"POST sent -> head read": {"median": _pct(sent_to_read, 50), "p90": _pct(sent_to_read, 90)},
            "SSE frame -> client reads it": {"median": _pct(frame_to_client, 50), "p90": _pct(frame_to_client, 90)},
            "SSE frame -> client, by message": [_pct(v, 50) for v in grouped(lags)]}


def stages_by_message(samples, runs: dict[str, dict[str, float]]) -> list[dict[str, float | None]]:
    """Each stage's median (ms) for each message of the round (a list from the 1st), the
    client's samples joined to the server's rows by run: where the 1st, 2nd... message's time
    went, which a split by waves or first/later messages blurs."""
    pairs = [(s.index, runs[s.run_id]) for s in samples if not s.failed and s.run_id in runs]
    return [{label: values["median"] for label, values in stages(group).items()} for group in grouped(pairs)]


def _client_ttfts(samples) -> dict[str, list[float]]:
    """The client's first tokens (ms, from sending the POST), as bench/streaming.py counts them."""
    timed = [s for s in samples if s.ttft_ms is not None and not s.failed]
    return {"all": [s.ttft_ms for s in timed], "first messages": [s.ttft_ms for s in timed if s.opening],
            "later messages": [s.ttft_ms for s in timed if not s.opening]}


def measure(conversations: int, duration: float, spread: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stages.jsonl"
        os.environ["BENCH_WRAP"] = str(Path(__file__).parent / "stage_clock.py")
        os.environ["STAGES_OUT"] = str(out)
        try:
            with Llmock(FIRST_TOKEN_MS, CHUNK_MS) as mock, Embedded(mock) as system:
                asyncio.run(_drive(system, 2, WARM_UP_SECONDS, []))
                began = time.monotonic()  # the server's clock too (CLOCK_MONOTONIC is the machine's)
                samples, _ = asyncio.run(_drive(system, conversations, duration, [], spread=spread))
        finally:
            os.environ.pop("BENCH_WRAP")
        rows = [json.loads(line) for line in out.read_text().splitlines()]
    runs, connects = runs_of(rows, since=began)
    timed = {run_id: run for run_id, run in runs.items() if "arrived" in run}  # not the warm-up's
    first = openings(timed, conversations)
    return {"python": platform.python_version(), "conversations": conversations, "duration_s": duration,
            "runs": len(timed), "failed": sum(1 for s in samples if s.failed),
            "connections": {"n": len(connects), "median_ms": _pct(connects, 50), "p90_ms": _pct(connects, 90)},
            "client first token by message": [_pct(values, 50)
                                             for values in by_message([s for s in samples if not s.failed])],
            "client first token": {group: {"median": _pct(ttfts, 50), "p90": _pct(ttfts, 90), "n": len(ttfts)}
                                   for group, ttfts in _client_ttfts(samples).items()},
            "waves": by_wave(timed, conversations),
            "client": client_stages(samples, timed),
            "stages by message": stages_by_message(samples, timed),
            "all": stages(list(timed.values())),
            "first messages": stages([r for i, r in timed.items() if i in first]),
            "later messages": stages([r for i, r in timed.items() if i not in first])}


def _numbered(values: list) -> str:
    return ", ".join(f"{n}: {v}" for n, v in enumerate(values, start=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--arrivals", choices=("together", "spread"), default="together")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    spread = spread_seconds(args.arrivals, FIRST_TOKEN_MS, CHUNK_MS)
    result = measure(args.conversations, args.duration, spread) | {"arrivals": args.arrivals}
    if args.json:
        print(json.dumps(result))
        return
    c = result["connections"]
    print(f"embedded Heddle on Python {result['python']}, {result['conversations']} conversations "
          f"({args.arrivals}), {result['runs']} runs, {result['failed']} failed; new model connections: "
          f"{c['n']}, {c['median_ms']} ms median to connect (p90 {c['p90_ms']})")
    print(f"{'stage (ms, median / p90)':<30} {'all':>15} {'first messages':>15} {'later messages':>15}")
    for label, *_ in STAGES:
        cells = [result[group][label] for group in ("all", "first messages", "later messages")]
        print(f"{label:<30} " + " ".join(f"{str(c['median']) + ' / ' + str(c['p90']):>15}" for c in cells))
    cells = [result["client first token"][group] for group in ("all", "first messages", "later messages")]
    print(f"{CLIENT_LABEL:<30} " + " ".join(f"{str(c['median']) + ' / ' + str(c['p90']):>15}" for c in cells))
    print("POST arrival -> SSE frame by wave (" + str(result["conversations"]) + " POSTs each, in arrival order): "
          + ", ".join(f"{n}: {w['to_sse_frame_ms']} ms (arrived over {w['arrival_spread_ms']:.0f} ms, p10-p90)"
                      for n, w in enumerate(result["waves"], start=1)))
    c = result["client"]
    print("the client's share: POST sent -> head read {0[median]} / {0[p90]} ms; SSE frame -> client reads it "
          "{1[median]} / {1[p90]} ms (median / p90); by message: {2}".format(
              c["POST sent -> head read"], c["SSE frame -> client reads it"],
              _numbered(c["SSE frame -> client, by message"])))
    print("the client's first token by message of the round, median ms: "
          + _numbered(result["client first token by message"]))
    print("each stage by message of the round, median ms:")
    for label, *_ in STAGES:
        print(f"  {label:<30} " + _numbered([message[label] for message in result["stages by message"]]))


if __name__ == "__main__":
    main()
