"""What each rail knows, side by side with the size of the official directory it stands in
for, and which shipped file each answer comes from (`heddle identify coverage`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

from schwifty import registry as schwifty_registry

from heddle.identify.datasets import CuratedData
from heddle.identify.schemas import Rail


@dataclass(frozen=True)
class Official:
    """The directory a rail's full answer comes from, and its size where it is published."""

    directory: str
    size: int | None
    unit: str
    source: str


# Sizes as counted in the copies named; a directory that is not published has no size.
OFFICIAL: dict[Rail, Official] = {
    Rail.SWIFT: Official("SWIFT BIC directory (licensed by SWIFT)", None, "BICs",
                         "not published openly, so there is no open copy to import"),
    Rail.IBAN: Official("national bank-code directories (one per country)", None, "bank codes",
                        "schwifty's bank registries, one for each country it covers"),
    Rail.ROUTING_NUMBER: Official("FedACH participant directory (Federal Reserve)", 18_198,
                                  "routing numbers",
                                  "the copy in moov-io/fed data/FedACHdir.txt (2026-08); "
                                  "Fedwire directory: 7,693 (data/fpddir.txt)"),
    Rail.SORT_CODE: Official("EISCD (Pay.UK, licensed)", None, "sort codes",
                             "not published; import a licensed copy with --format eiscd"),
    Rail.IFSC: Official("RBI list of NEFT-enabled branches", 182_295, "IFSCs",
                        "razorpay/ifsc src/IFSC.json (2026-05-27)"),
    Rail.NUBAN: Official("CBN lists of licensed institutions", 899, "institutions",
                         "naija-data 1.0.0 count of the CBN supervision lists (2026-10); "
                         "NIBSS NIP participants: 297 in the shipped lists"),
    Rail.MOMO: Official("mobile-money operators (per central bank)", None, "operators",
                        "no consolidated directory"),
    Rail.GH_BANK: Official("GhIPSS sort codes", None, "sort codes",
                           "not published openly; Bank of Ghana licenses 23 universal banks"),
}


def shipped_codes(curated: CuratedData) -> dict[Rail, dict[str, set]]:
    """Per rail: the institutions and codes the shipped data answers (schwifty included);
    `ranges` are sort-code ranges, which name the clearing bank but identify nothing."""
    schwifty_banks = schwifty_registry.get_all_banks()
    bics = set(curated.bics) | {b.bic[:8] for b in schwifty_banks if b.bic}
    iban = {(b.country_code, b.bank_code) for b in schwifty_banks if b.bank_code}
    ng = {id(r): r for r in [*curated.ng_by_nuban_code.values(), *curated.ng_by_nip_code.values()]}
    sort_exact = {r.start for r in curated.sort_code_ranges if r.evidence and r.start == r.end}
    return {
        Rail.SWIFT: {"institutions": bics, "codes": bics, "ranges": set()},
        Rail.IBAN: {"institutions": iban, "codes": iban, "ranges": set()},
        Rail.ROUTING_NUMBER: {"institutions": set(curated.routing_numbers),
                              "codes": set(curated.routing_numbers), "ranges": set()},
        Rail.SORT_CODE: {
            "institutions": {r.institution.name for r in curated.sort_code_ranges
                             if r.evidence and r.institution},
            "codes": sort_exact,
            "ranges": {(r.start, r.end) for r in curated.sort_code_ranges if not r.evidence}},
        Rail.IFSC: {"institutions": {i.name for i in curated.ifsc_banks.values()}
                    | {i.name for i in curated.ifsc_sublets.exact.values()}
                    | {i.name for _, i in curated.ifsc_sublets.prefixes},
                    "codes": set(curated.ifsc_sublets.exact),
                    "ranges": set(curated.ifsc_banks)
                    | {p for p, _ in curated.ifsc_sublets.prefixes}},
        Rail.NUBAN: {"institutions": set(ng),
                     "codes": set(curated.ng_by_nuban_code) | set(curated.ng_by_nip_code),
                     "ranges": set()},
        Rail.MOMO: {"institutions": {(o.country, o.institution.code)
                                     for o in curated.momo_operators.values()},
                    "codes": {(o.country, o.institution.code)
                              for o in curated.momo_operators.values()}, "ranges": set()},
        Rail.GH_BANK: {"institutions": set(curated.gh_banks), "codes": set(curated.gh_banks),
                       "ranges": set(curated.gh_bank_prefixes)},
    }


def coverage_report(curated: CuratedData, imported: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """Per rail: shipped `institutions`, `codes` and `ranges`; `imported` rows; `total`
    distinct codes answered exactly; and the official directory beside them. `curated` is
    kept as the count of shipped codes (an earlier name for it)."""
    report = {}
    for rail, shipped in shipped_codes(curated).items():
        rows = imported.get(rail.value, set())
        codes = {c for c in shipped["codes"] if isinstance(c, str)} | rows
        report[rail.value] = {
            "institutions": len(shipped["institutions"]),
            "codes": len(shipped["codes"]),
            "ranges": len(shipped["ranges"]),
            "curated": len(shipped["codes"]),
            "imported": len(rows),
            "total": len(codes) if rows else len(shipped["codes"]),
            "official": asdict(OFFICIAL[rail]),
        }
    return report


def shipped_files() -> list[dict[str, Any]]:
    """Every data file in the package with its dataset, as_of, licence and sources."""
    files = []
    for item in sorted(resources.files("heddle.identify").joinpath("data").iterdir(),
                       key=lambda i: i.name):
        if not item.name.endswith(".json"):
            continue
        header = json.loads(item.read_text(encoding="utf-8"))
        files.append({"file": item.name, "dataset": header["dataset"], "as_of": header["as_of"],
                      "licence": header["licence"], "sources": header["sources"]})
    return files
