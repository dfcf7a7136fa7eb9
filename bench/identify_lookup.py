"""In-process Identify lookups per second and their p50/p99 latency, per rail; the memory
the shipped directories take; the size of the shipped data.

Runs `IdentifyService.identify` on a warm directory with no name resolution (no account
number), cycling through real identifiers of each rail; `detect` sends a mix without `rail`.
Memory is measured in a fresh process: RSS after importing the service (the baseline, in the
same run), then after building the directory and one lookup on every rail; the difference is
what the directories cost. Data size: the files in heddle/identify/data, raw and as the wheel
stores them (deflate). Prints tables, then one JSON line:
{"benchmark": "identify_lookup", "lookups_per_second": {...}, "latency_us": {...},
 "memory_mb": {...}, "data_bytes": {...}}.

    python bench/identify_lookup.py [--seconds 1.0] [--samples 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import zlib
from importlib import resources

from heddle.identify.directory import Directory
from heddle.identify.names import NameResolverRegistry
from heddle.identify.schemas import IdentifyRequest, Rail
from heddle.identify.service import IdentifyService

SAMPLES: dict[str, list[dict[str, str]]] = {
    Rail.SWIFT: [{"identifier": b} for b in ("DEUTDEFF", "CHASUS33", "NWBKGB2L", "BARCGB22XXX")],
    Rail.IBAN: [{"identifier": i} for i in ("DE89370400440532013000", "FR1420041010050500013M02606",
                                            "GB29NWBK60161331926819", "ES9121000418450200051332")],
    Rail.ROUTING_NUMBER: [{"identifier": r} for r in ("021000021", "026009593", "121000248")],
    Rail.SORT_CODE: [{"identifier": s} for s in ("20-00-00", "608371", "40-47-84")],
    Rail.IFSC: [{"identifier": c} for c in ("SBIN0000300", "HDFC0000001", "ICIC0000002")],
    Rail.NUBAN: [{"identifier": "058"}, {"identifier": "044"}, {"identifier": "0123456789"}],
    Rail.MOMO: [{"identifier": w} for w in ("+233241234567", "+2348031234567", "+254712345678")],
    Rail.GH_BANK: [{"identifier": c} for c in ("040100", "130100", "280100")],
}
DETECT_MIX = ["DEUTDEFF", "DE89370400440532013000", "021000021", "20-00-00", "SBIN0000300",
              "+233241234567"]


def _requests() -> dict[str, list[IdentifyRequest]]:
    plans = {rail.value: [IdentifyRequest(rail=rail, **sample) for sample in samples]
             for rail, samples in SAMPLES.items()}
    plans["detect"] = [IdentifyRequest(identifier=i) for i in DETECT_MIX]
    return plans


async def _measure(service: IdentifyService, requests: list[IdentifyRequest],
                   seconds: float) -> float:
    for request in requests:  # warm caches (schwifty loads a country's registry lazily)
        await service.identify(request)
    done, started = 0, time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        for request in requests:
            await service.identify(request)
        done += len(requests)
    return done / (time.perf_counter() - started)


def bench_lookups(seconds_per_rail: float = 1.0) -> dict[str, float]:
    """Lookups per second for each rail, and for rail detection (`detect`)."""
    service = IdentifyService(Directory(), NameResolverRegistry())

    async def run() -> dict[str, float]:
        return {name: await _measure(service, requests, seconds_per_rail)
                for name, requests in _requests().items()}

    return asyncio.run(run())


def bench_latency(samples: int = 2000) -> dict[str, dict[str, float]]:
    """p50 and p99 of single lookups, in microseconds, per rail (warm directory)."""
    service = IdentifyService(Directory(), NameResolverRegistry())

    async def run() -> dict[str, dict[str, float]]:
        out = {}
        for name, requests in _requests().items():
            for request in requests:
                await service.identify(request)
            times = []
            for i in range(samples):
                request = requests[i % len(requests)]
                started = time.perf_counter_ns()
                await service.identify(request)
                times.append((time.perf_counter_ns() - started) / 1000)
            cuts = statistics.quantiles(times, n=100)
            out[name] = {"p50": round(cuts[49], 1), "p99": round(cuts[98], 1)}
        return out

    return asyncio.run(run())


_MEMORY_PROBE = """
import asyncio, json
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
interpreter = rss()
from heddle.identify.directory import Directory
from heddle.identify.names import NameResolverRegistry
from heddle.identify.schemas import IdentifyRequest
from heddle.identify.service import IdentifyService
import identify_lookup as bench
base = rss()
service = IdentifyService(Directory(), NameResolverRegistry())
service.directory.warm_up()
async def every_rail():
    for requests in bench._requests().values():
        for request in requests:
            await service.identify(request)
asyncio.run(every_rail())
print(json.dumps({"interpreter": round(interpreter, 1), "baseline": round(base, 1),
                  "after_first_lookups": round(rss(), 1)}))
"""


def bench_memory() -> dict[str, float]:
    """RSS (MB) of a fresh process: bare (`interpreter`), after importing the service
    (`baseline`; the IBAN rail reads schwifty's registries at import), and after building the
    directory and one lookup on every rail. `directories` is the last minus the baseline,
    `identify` the last minus the bare interpreter."""
    here = str(__import__("pathlib").Path(__file__).parent)
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE], capture_output=True, text=True,
                         check=True, timeout=300, cwd=here,
                         env={**__import__("os").environ, "PYTHONPATH": here}).stdout
    report = json.loads(out.strip().splitlines()[-1])
    report["directories"] = round(report["after_first_lookups"] - report["baseline"], 1)
    report["identify"] = round(report["after_first_lookups"] - report["interpreter"], 1)
    return report


def data_size() -> dict[str, int]:
    """Bytes of the shipped data files, raw and deflated as in the wheel."""
    raw = packed = 0
    for item in resources.files("heddle.identify").joinpath("data").iterdir():
        if item.is_file():
            content = item.read_bytes()
            raw += len(content)
            packed += len(zlib.compress(content, 6))
    return {"raw": raw, "in_wheel": packed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per rail")
    parser.add_argument("--samples", type=int, default=2000, help="latency samples per rail")
    args = parser.parse_args()
    results = bench_lookups(args.seconds)
    latency = bench_latency(args.samples)
    memory = bench_memory()
    size = data_size()
    print(f"{'rail':<16}{'lookups/s':>12}{'us/lookup':>12}{'p50 us':>10}{'p99 us':>10}")
    for name, rate in results.items():
        print(f"{name:<16}{rate:>12,.0f}{1e6 / rate:>12.1f}{latency[name]['p50']:>10.1f}"
              f"{latency[name]['p99']:>10.1f}")
    print(f"RSS: {memory['interpreter']:.1f} MB bare, {memory['baseline']:.1f} MB after imports, "
          f"{memory['after_first_lookups']:.1f} MB after the first lookup on every rail "
          f"(Identify: {memory['identify']:.1f} MB)")
    print(f"data: {size['raw'] / 1e6:.2f} MB raw, {size['in_wheel'] / 1e6:.2f} MB in the wheel")
    print(json.dumps({"benchmark": "identify_lookup",
                      "lookups_per_second": {k: round(v, 1) for k, v in results.items()},
                      "latency_us": latency, "memory_mb": memory, "data_bytes": size}))


if __name__ == "__main__":
    main()
