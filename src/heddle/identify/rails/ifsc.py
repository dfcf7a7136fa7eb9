"""Indian Financial System Code: 4-letter bank code, a reserved '0', 6-character branch code.
The bank comes from the curated bank codes, the branch (city) from imported IFSC rows."""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from heddle.identify.rails.base import (
    LookupContext,
    RailOutcome,
    compact,
    digits_account,
    identified,
    invalid,
    not_found,
)
from heddle.identify.schemas import Rail

_IFSC = re.compile(r"[A-Z]{4}0[A-Z0-9]{6}", re.ASCII)
_SHAPE = re.compile(r"[A-Z]{4}[A-Z0-9]{7}", re.ASCII)


class IfscRail:
    rail: ClassVar[Rail] = Rail.IFSC
    countries: ClassVar[frozenset[str] | None] = frozenset({"IN"})

    def looks_like(self, raw: str, country: str | None) -> bool:
        code = compact(raw)
        return bool(_SHAPE.fullmatch(code)) and code[4] == "0"

    def parse(self, raw: str, country: str | None) -> str:
        code = compact(raw)
        if len(code) != 11:
            raise invalid(self.rail, "An IFSC has 11 characters, such as SBIN0000300.",
                          length=len(code))
        if not _IFSC.fullmatch(code):
            raise invalid(self.rail, "An IFSC is 4 letters (the bank), the digit 0, then 6 letters "
                                     "or digits (the branch).")
        return code

    def lookup(self, code: str, account_number: str | None, ctx: LookupContext) -> RailOutcome:
        # Indian bank account numbers run from 9 to 18 digits depending on the bank.
        account = digits_account(self.rail, account_number, range(9, 19), "An Indian account number")
        bank = ctx.directory.curated.ifsc_banks.get(code[:4])
        record = ctx.directory.imported(self.rail, code)
        if record is not None:
            branch = record.institution
            # Imported rows win for name and city; the curated bank fills the BIC and type.
            institution = dataclasses.replace(
                branch, bic=branch.bic or (bank.bic if bank else None),
                type=bank.type if bank else branch.type)
            return identified(self.rail, institution, rails=record.rails_with(bank),
                              account_number=account)
        if bank is not None:
            # The first four letters are the bank: identifying the bank is certain even when
            # the branch is not in the imported directory.
            return identified(self.rail, dataclasses.replace(bank, code=code),
                              account_number=account)
        return not_found(self.rail, f"No bank with IFSC bank code {code[:4]} is in the directory; "
                                    "import the RBI IFSC list to cover every bank.",
                         country="IN", account_number=account)
