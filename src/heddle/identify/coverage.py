"""What each rail knows, side by side with the size of the official directory it stands in
for, and which shipped file each answer comes from (`heddle identify coverage`)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

from schwifty import registry as schwifty_registry

from heddle.identify.bics import load_bic_index
from heddle.identify.datasets import CuratedData
from heddle.identify.ifsc_branches import load_branch_list
from heddle.identify.importers.gleif import mapping_notice
from heddle.identify.ng_list import read_cbn_list
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
    Rail.SWIFT: Official(
        "GLEIF's BIC-to-LEI relationship file (the open BIC-keyed part of SWIFT's licensed BIC directory)",
        39_000,
        "BIC11s",
        "about 39,000 rows in the monthly file (2026), none shipped: import it with "
        "`heddle identify import FILE --format gleif-bic-lei --names LEI-CDF`; SWIFT's own "
        "directory (some 130,000 BICs in 2018) is licensed and not published",
    ),
    Rail.IBAN: Official(
        "national bank-code directories (one per country)",
        None,
        "bank codes",
        "schwifty's bank registries, one for each country it covers",
    ),
    Rail.ROUTING_NUMBER: Official(
        "FedACH participant directory (Federal Reserve)",
        18_198,
        "routing numbers",
        "the copy in moov-io/fed data/FedACHdir.txt (2026-08); Fedwire directory: 7,693 (data/fpddir.txt)",
    ),
    Rail.SORT_CODE: Official(
        "EISCD (Pay.UK, licensed)", None, "sort codes", "not published; import a licensed copy with --format eiscd"
    ),
    Rail.IFSC: Official(
        "RBI list of NEFT-enabled branches", 182_295, "IFSCs", "razorpay/ifsc src/IFSC.json (2026-05-27)"
    ),
    Rail.NUBAN: Official(
        "CBN lists of licensed institutions",
        899,
        "institutions",
        "naija-data 1.0.0 count of the CBN supervision lists (2026-10), "
        "shipped whole in ng_cbn_list.json; most have no published code",
    ),
    Rail.MOMO: Official("mobile-money operators (per central bank)", None, "operators", "no consolidated directory"),
    Rail.GH_BANK: Official(
        "GhIPSS sort codes", None, "sort codes", "not published openly; Bank of Ghana licenses 23 universal banks"
    ),
}


def shipped_codes(curated: CuratedData) -> dict[Rail, dict[str, set]]:
    """Per rail: the institutions and codes the shipped data answers (schwifty included);
    `ranges` are sort-code ranges, which name the clearing bank but identify nothing."""
    schwifty_banks = schwifty_registry.get_all_banks()
    bic_index = load_bic_index(curated)
    bics = set(bic_index.head) | set(bic_index.exact)
    holders = {h.institution.name for h in (*bic_index.head.values(), *bic_index.exact.values())}
    iban = {(b.country_code, b.bank_code) for b in schwifty_banks if b.bank_code}
    ng = {id(r): r for r in [*curated.ng_by_nuban_code.values(), *curated.ng_by_nip_code.values()]}
    sort_exact = {r.start for r in curated.sort_code_ranges if r.evidence and r.start == r.end}
    branches = load_branch_list()
    ifsc_codes = set(curated.ifsc_sublets.exact) | {f"{bank}:{n}" for bank, n in branches.banks().items()}
    return {
        Rail.SWIFT: {"institutions": holders, "codes": bics, "ranges": set()},
        Rail.IBAN: {"institutions": iban, "codes": iban, "ranges": set()},
        Rail.ROUTING_NUMBER: {
            "institutions": set(curated.routing_numbers),
            "codes": set(curated.routing_numbers),
            "ranges": set(),
        },
        Rail.SORT_CODE: {
            "institutions": {r.institution.name for r in curated.sort_code_ranges if r.evidence and r.institution},
            "codes": sort_exact,
            "ranges": {(r.start, r.end) for r in curated.sort_code_ranges if not r.evidence},
        },
        Rail.IFSC: {
            "institutions": {i.name for i in curated.ifsc_banks.values()}
            | {i.name for i in curated.ifsc_sublets.exact.values()}
            | {i.name for _, i in curated.ifsc_sublets.prefixes},
            "codes": ifsc_codes,
            "code_count": branches.count + len(curated.ifsc_sublets.exact),
            "branch_details": branches.details_count,
            "ranges": set(curated.ifsc_banks) | {p for p, _ in curated.ifsc_sublets.prefixes},
        },
        # Institutions: the CBN's list, shipped whole (the curated ones are on it too).
        Rail.NUBAN: {
            "institutions": {e.name for e in read_cbn_list().entries} or set(ng),
            "codes": set(curated.ng_by_nuban_code) | set(curated.ng_by_nip_code),
            "ranges": set(),
        },
        Rail.MOMO: {
            "institutions": {(o.country, o.institution.code) for o in curated.momo_operators.values()},
            "codes": {(o.country, o.institution.code) for o in curated.momo_operators.values()},
            "ranges": set(),
        },
        Rail.GH_BANK: {
            "institutions": set(curated.gh_banks),
            "codes": set(curated.gh_banks),
            "ranges": set(curated.gh_bank_prefixes),
        },
    }


def coverage_report(curated: CuratedData, imported: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """Per rail: shipped `institutions`, `codes` and `ranges`; `branch_details`, the shipped
    codes answered with their branch, city and per-branch rails; `imported` rows; `total`
    distinct codes answered exactly; and the official directory beside them. `curated` is
    kept as the count of shipped codes (an earlier name for it)."""
    report = {}
    for rail, shipped in shipped_codes(curated).items():
        rows = imported.get(rail.value, set())
        count = shipped.get("code_count", len(shipped["codes"]))
        codes = {c for c in shipped["codes"] if isinstance(c, str)} | rows
        report[rail.value] = {
            "institutions": len(shipped["institutions"]),
            "codes": count,
            "ranges": len(shipped["ranges"]),
            "branch_details": shipped.get("branch_details", 0),
            "curated": count,
            "imported": len(rows),
            "total": max(len(codes), count) if rows else count,
            "official": asdict(OFFICIAL[rail]),
        }
    # Heddle ships no row of GLEIF's BIC-to-LEI file; every swift row imported is one of it.
    report[Rail.SWIFT.value]["bic_lei"] = {"shipped": 0, "imported": len(imported.get(Rail.SWIFT.value, ()))}
    return report


# How often each source is republished, in days: a shipped file older than that may miss
# changes and is flagged by `heddle identify coverage`. Curated files are reviewed yearly.
UPDATE_CYCLE_DAYS: dict[str, int] = {
    "ifsc_branches": 31,  # RBI's list changes weekly; razorpay/ifsc releases about monthly
    "ifsc_razorpay": 31,
    "ng_cbn_list": 92,  # the CBN's supervision lists; naija-data releases quarterly or so
    "ng_nip_codes": 183,
    "uk_modulus_weights": 183,  # Pay.UK revises the modulus tables a few times a year
}
CURATED_CYCLE_DAYS = 365


def _header(item) -> dict[str, Any]:
    raw = item.read_bytes()
    return json.loads(gzip.decompress(raw) if item.name.endswith(".gz") else raw)


def shipped_files(today: dt.date | None = None) -> list[dict[str, Any]]:
    """Every data file in the package with its dataset, as_of, licence and sources, and
    `stale` when it is older than its source's update cycle."""
    today = today or dt.date.today()
    files = []
    for item in sorted(resources.files("heddle.identify").joinpath("data").iterdir(), key=lambda i: i.name):
        if not item.name.endswith((".json", ".json.gz")):
            continue
        header = _header(item)
        cycle = UPDATE_CYCLE_DAYS.get(header["dataset"], CURATED_CYCLE_DAYS)
        age = (today - dt.date.fromisoformat(header["as_of"])).days
        entry = {
            "file": item.name,
            "dataset": header["dataset"],
            "as_of": header["as_of"],
            "licence": header["licence"],
            "sources": header["sources"],
            "age_days": age,
            "update_cycle_days": cycle,
            "stale": age > cycle,
        }
        if "details_as_of" in header:  # a part built from an older source (IFSC.csv)
            entry["details_as_of"] = header["details_as_of"]
        files.append(entry)
    return files


# How often each importable source's publisher republishes it, in days: an import older than
# that is `stale` in `heddle identify coverage`.
PUBLISHER_CADENCE_DAYS: dict[str, int] = {
    "gleif": 31,  # the BIC-to-LEI mapping: monthly
    "fedach": 31, "fedwire": 31,  # the Fed's directories change daily; operators refresh monthly
    "ifsc-csv": 31, "ifsc-xlsx": 31, "razorpay-ifsc": 31,  # RBI's list: weekly; Razorpay's releases ~monthly
    "eiscd": 31,  # Pay.UK's EISCD: weekly to monthly
}
IMPORT_CADENCE_DAYS = 31


def imported_source_report(sources: dict[str, dict[str, Any]], today: dt.date | None = None) -> list[dict[str, Any]]:
    """Per imported source: rows, `as_of` (the publisher's date of the data, or the import
    day), its cadence and whether it is stale by it; GLEIF's carries the mapping's notice."""
    today = today or dt.date.today()
    out = []
    for name, found in sorted(sources.items()):
        as_of = dt.date.fromisoformat(found["as_of"])
        cadence = PUBLISHER_CADENCE_DAYS.get(name, IMPORT_CADENCE_DAYS)
        entry = {"source": name, "rows": found["rows"], "as_of": as_of.isoformat(),
                 "imported_at": found["imported_at"].isoformat(), "cadence_days": cadence,
                 "age_days": (today - as_of).days, "stale": (today - as_of).days > cadence}
        if name == "gleif":
            entry["notice"] = mapping_notice(as_of)
        out.append(entry)
    return out
