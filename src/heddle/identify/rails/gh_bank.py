"""Ghana: GhIPSS sort codes (2-digit bank code + 4-digit branch code; 0100 is the head office)."""

from __future__ import annotations

from typing import ClassVar

from heddle.identify.checkdigits import is_digits
from heddle.identify.rails.base import (
    FixedCountries,
    LookupContext,
    RailOutcome,
    compact,
    digits_account,
    find_code,
    found,
    invalid,
    not_found,
)
from heddle.identify.schemas import Rail


class GhanaBankRail(FixedCountries):
    rail: ClassVar[Rail] = Rail.GH_BANK
    countries: ClassVar[frozenset[str] | None] = frozenset({"GH"})

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        return is_digits(compact(raw), 6)

    def parse(self, raw: str, country: str | None) -> str:
        code = compact(raw)
        if not is_digits(code, 6):
            raise invalid(self.rail, "A Ghanaian bank sort code is 6 digits, such as 040100.")
        return code

    def lookup(self, code: str, account_number: str | None, ctx: LookupContext) -> RailOutcome:
        # Ghanaian account numbers vary by bank (commonly 10 to 16 digits); 8 to 20 are accepted.
        account = digits_account(self.rail, account_number, range(8, 21), "A Ghanaian account number")
        hit = find_code(ctx, self.rail, code, ctx.directory.curated.gh_banks.get(code))
        if hit is not None:
            return found(self.rail, hit, account_number=account)
        bank = ctx.directory.curated.gh_bank_prefixes.get(code[:2])
        if bank is not None:
            return not_found(self.rail, f"Sort code {code} is in the range of {bank.name} "
                                        f"({bank.code}), but only listed sort codes are identified: "
                                        "other institutions also hold codes in banks' ranges. "
                                        f"Send the head-office code {bank.code} to identify the bank.",
                             country="GH", account_number=account)
        return not_found(self.rail, "No Ghanaian institution with this sort code is in the directory.",
                         country="GH", account_number=account)
