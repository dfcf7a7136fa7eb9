"""How many institutions (or codes) each rail knows, curated and imported."""

from __future__ import annotations

from schwifty import registry as schwifty_registry

from heddle.identify.datasets import CuratedData
from heddle.identify.schemas import Rail


def curated_codes(curated: CuratedData) -> dict[str, set]:
    """The codes each rail answers from shipped data (schwifty's registries included)."""
    schwifty_banks = schwifty_registry.get_all_banks()
    return {
        Rail.SWIFT: set(curated.bics) | {b.bic[:8] for b in schwifty_banks if b.bic},
        Rail.IBAN: {(b.country_code, b.bank_code) for b in schwifty_banks if b.bank_code},
        Rail.ROUTING_NUMBER: set(curated.routing_numbers),
        Rail.SORT_CODE: {(r.start, r.end) for r in curated.sort_code_ranges if r.institution},
        Rail.IFSC: set(curated.ifsc_banks),
        Rail.NUBAN: set(curated.ng_by_nuban_code) | set(curated.ng_by_nip_code),
        Rail.MOMO: {(o.country, o.institution.code) for o in curated.momo_operators.values()},
        Rail.GH_BANK: set(curated.gh_banks),
    }


def coverage_report(curated: CuratedData, imported: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    """Per rail: `curated` entries, `imported` rows, and `total` distinct codes."""
    report = {}
    for rail, codes in curated_codes(curated).items():
        rows = imported.get(rail.value, set())
        report[rail.value] = {"curated": len(codes), "imported": len(rows),
                              "total": len(codes | rows)}
    return report
