"""Build `data/ifsc_razorpay.json` (every IFSC bank code, its type and rails, and the
sub-member maps) from Razorpay's `ifsc` npm package.

The package (MIT, Copyright (c) 2020 Razorpay; its README: "The dataset itself is under public
domain") carries, under `package/src/`: `banknames.json` (bank code -> name), `banks.json`
(bank code -> type, UPI flag, ...), `IFSC.json` (bank code -> branch codes in RBI's list),
`sublet.json` (sub-member IFSC -> the bank code holding it, from NPCI's NACH live members
list) and `custom-sublets.json` (leased IFSC prefixes -> bank code or, where Razorpay knows
only a name, that name).

    npm pack ifsc@2.0.50 && tar xzf ifsc-2.0.50.tgz
    python -m heddle.identify.importers.ifsc_razorpay --src package/src --version 2.0.50 \\
        --as-of 2026-08-24 --out src/heddle/identify/data/ifsc_razorpay.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from heddle.identify.data_schemas import IfscSubletFile

# Razorpay's bank types -> Heddle's institution types (docs/identify.md, vocabulary).
TYPES = {
    "PSB": "bank",
    "Private": "bank",
    "Foreign": "bank",
    "SFB": "small_finance_bank",
    "PB": "payments_bank",
    "RRB": "regional_rural_bank",
    "O-UCB": "urban_cooperative_bank",
    "S-UCB": "urban_cooperative_bank",
    "DCCB": "cooperative_bank",
    "SCB": "cooperative_bank",
    "LAB": "local_area_bank",
}
FILES = ("banknames.json", "banks.json", "IFSC.json", "sublet.json", "custom-sublets.json")

NOTES = (
    "Every 4-letter IFSC bank code with a name. `type` maps Razorpay's bank type: PSB, Private "
    "and Foreign -> bank; SFB -> small_finance_bank; PB -> payments_bank; RRB -> "
    "regional_rural_bank; O-UCB and S-UCB -> urban_cooperative_bank; DCCB and SCB -> "
    "cooperative_bank; LAB -> local_area_bank; no type -> financial_institution. "
    "`reachable_rails`: `neft` where the bank has branches in the RBI NEFT list, `upi` where "
    "NPCI lists it live on UPI. `sublets` maps a sub-member IFSC (a code of a sponsor bank "
    "leased to another bank, usually a co-operative) to the bank that holds it; "
    "`sublet_prefixes` maps a leased prefix to a bank code or, where Razorpay gives only a "
    "name, that name. ifsc_banks.json (curated) wins for the banks it lists. Built by "
    "heddle.identify.importers.ifsc_razorpay."
)


def build(src: dict[str, Any], *, version: str, as_of: dt.date) -> dict[str, Any]:
    """`src`: the five files of the package's `src/` folder, by file name."""
    names: dict[str, str] = src["banknames.json"]
    banks: dict[str, dict[str, Any]] = src["banks.json"]
    listed: dict[str, list] = src["IFSC.json"]
    entries = []
    for code, name in sorted(names.items()):
        bank = banks.get(code, {})
        kind = bank.get("type")
        if kind is not None and kind not in TYPES:
            raise ValueError(f"{code}: unknown Razorpay bank type {kind!r}")
        rails = [r for r, on in (("neft", bool(listed.get(code))), ("upi", bool(bank.get("upi")))) if on]
        entries.append(
            {
                "prefix": code,
                "name": name.strip(),
                "type": TYPES.get(kind, "financial_institution"),
                "reachable_rails": rails,
            }
        )
    data = {
        "dataset": "ifsc_razorpay",
        "as_of": as_of.isoformat(),
        "licence": "MIT (code) / public domain (data), Razorpay",
        "sources": [
            f"ifsc {version} (npm registry package by Razorpay), package/src/: banknames.json "
            "(bank names), banks.json (bank type, UPI flag), IFSC.json (which banks have "
            "NEFT-enabled branches in the RBI list), sublet.json (sub-member IFSCs, from NPCI's "
            "NACH live members list) and custom-sublets.json (IFSC prefixes leased as a whole)",
            "Licence: the package is MIT (Copyright (c) 2020 Razorpay); its README states that "
            "the dataset itself is in the public domain",
        ],
        "notes": NOTES,
        "entries": entries,
        "sublets": dict(sorted(src["sublet.json"].items())),
        "sublet_prefixes": dict(sorted(src["custom-sublets.json"].items())),
    }
    IfscSubletFile.model_validate(data)  # the loader's own checks, before anything is written
    return data


def write(data: dict[str, Any], out: Path) -> None:
    """One entry a line, as the file has always been laid out (readable diffs)."""
    head = {k: v for k, v in data.items() if k not in ("entries", "sublets", "sublet_prefixes")}
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in head.items()]
    lines.append('  "entries": [')
    lines.append(",\n".join(f"    {json.dumps(e, ensure_ascii=False)}" for e in data["entries"]))
    lines.append("  ],")
    for key in ("sublets", "sublet_prefixes"):
        body = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in data[key].items())
        lines.append(f'  "{key}": {{\n{body}\n  }}' + ("," if key == "sublets" else ""))
    lines.append("}")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True, help="the package's src/ folder")
    parser.add_argument("--version", required=True, help="the ifsc package's version")
    parser.add_argument("--as-of", type=dt.date.fromisoformat, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    src = {name: json.loads((args.src / name).read_text(encoding="utf-8")) for name in FILES}
    data = build(src, version=args.version, as_of=args.as_of)
    write(data, args.out)
    print(
        f"{len(data['entries'])} bank codes, {len(data['sublets'])} sub-member IFSCs, "
        f"{len(data['sublet_prefixes'])} leased prefixes written"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
