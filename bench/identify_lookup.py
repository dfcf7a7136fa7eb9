"""In-process Identify lookups per second, per rail.

Runs `IdentifyService.identify` on a warm directory with no name resolution (no account
number), cycling through real identifiers of each rail; `detect` sends a mix without `rail`.
Prints a table, then one JSON line: {"benchmark": "identify_lookup", "lookups_per_second": {...}}.

    python bench/identify_lookup.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per rail")
    args = parser.parse_args()
    results = bench_lookups(args.seconds)
    print(f"{'rail':<16}{'lookups/s':>12}{'us/lookup':>12}")
    for name, rate in results.items():
        print(f"{name:<16}{rate:>12,.0f}{1e6 / rate:>12.1f}")
    print(json.dumps({"benchmark": "identify_lookup",
                      "lookups_per_second": {k: round(v, 1) for k, v in results.items()}}))


if __name__ == "__main__":
    main()
