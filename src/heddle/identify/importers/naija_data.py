"""Build `data/ng_cbn_list.json` from naija-data's bank list (CC BY 4.0, attribution kept).

naija-data (PyPI) compiles the CBN's lists of licensed financial institutions (899: deposit
money, merchant and non-interest banks, microfinance and mortgage banks, PSBs, MMOs) with
their CBN and NIBSS NIP codes where known, and each institution's status (active, merged into
another, licence revoked). Codes the package marks unverified are kept out of lookups.

    python -m heddle.identify.importers.naija_data --banks naija_data/_data/banks.json \\
        --meta naija_data/_data/meta.json --out src/heddle/identify/data/ng_cbn_list.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TYPES = {
    "commercial": "bank", "non_interest": "bank", "merchant": "merchant_bank",
    "microfinance": "microfinance_bank", "mortgage": "mortgage_bank",
    "payment_service_bank": "payment_service_bank",
    "mobile_money_operator": "mobile_money_operator",
    "development_finance": "financial_institution",
}
ATTRIBUTION = ("naija-data by Akanji Oluwaseun Gabriel (https://github.com/asgatcreation/naija-data), "
               "CC BY 4.0; derived: fields selected and types mapped to Heddle's vocabulary")


def build(banks: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    by_id = {b["id"]: b for b in banks}
    entries = []
    for b in sorted(banks, key=lambda b: b["id"]):
        unverified = set(b.get("unverified_fields") or ())
        entry: dict[str, Any] = {"name": b["name"], "type": TYPES[b["type"]], "status": b["status"]}
        for field in ("cbn_code", "nip_code"):
            # An unverified code may still say `not_found` for a gone institution (never
            # billed), but it never identifies one.
            if b.get(field) and (field not in unverified or b["status"] != "active"):
                entry[field] = b[field]
        if b.get("status_date"):
            entry["status_date"] = b["status_date"]
        if b.get("merged_into"):
            entry["merged_into"] = by_id[b["merged_into"]]["name"]
        entries.append(entry)
    return {
        "dataset": "ng_cbn_list",
        "as_of": meta["data_version"],
        "licence": f"CC-BY-4.0: {ATTRIBUTION}",
        "sources": ["naija-data 1.0.0 (PyPI), naija_data/_data/banks.json: the CBN's lists of "
                    "financial institutions, Paystack's and Monnify's bank lists, CBN press "
                    "releases on mergers and revocations"],
        "notes": "Every institution on the CBN's lists. `cbn_code` and `nip_code` appear only "
                 "where naija-data marks them verified (or, for an institution that is no longer "
                 "active, to answer its codes `not_found`). `status`: active, merged (then "
                 "`merged_into`) or licence_revoked.",
        "entries": entries,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--banks", type=Path, required=True)
    parser.add_argument("--meta", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    data = build(json.loads(args.banks.read_text(encoding="utf-8")),
                 json.loads(args.meta.read_text(encoding="utf-8")))
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(data['entries'])} institutions written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
