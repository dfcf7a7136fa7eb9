"""UK sort codes: six digits, written 12-34-56.

A sort code is identified only from an entry for that exact code (an imported EISCD row or a
curated single code) or from a range whose source gives the whole range to one institution.
Clearing banks' range allocations are not such evidence: agency banks, building societies and
payment firms (Chase UK, Marcus, Triodos, Unity Trust, ...) hold codes inside NatWest's,
HSBC's or RBS's ranges. A code known only through such a range is `not_found`, and the detail
names the clearing bank.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from heddle.identify import uk_modulus
from heddle.identify.checkdigits import is_digits
from heddle.identify.datasets import SortCodeRange
from heddle.identify.rails.base import (
    FixedCountries,
    LookupContext,
    RailOutcome,
    compact,
    digits_account,
    find_code,
    identified,
    invalid,
    keep_curated_type,
    not_found,
)
from heddle.identify.schemas import Institution, Rail

COUNTRIES = frozenset({"GB", "GG", "JE", "IM"})  # Crown Dependencies use UK sort codes


@dataclass(frozen=True, slots=True)
class SortCodeMatch:
    institution: Institution
    rails: tuple[str, ...]


def written(code: str) -> str:
    return f"{code[:2]}-{code[2:4]}-{code[4:]}"


def lookup_sort_code(code: str, ctx: LookupContext) -> SortCodeMatch | None:
    """The institution holding a sort code, from evidence for that code only; else None."""
    entry = _most_specific(code, ctx)
    curated = entry.institution if entry is not None and entry.evidence else None
    # The directory (EISCD) does not say which kind of institution: the curated type is kept.
    hit = find_code(ctx, Rail.SORT_CODE, code,
                    dataclasses.replace(curated, code=code) if curated is not None else None,
                    merge=keep_curated_type)
    return None if hit is None else SortCodeMatch(hit.institution, hit.rails)


def clearing_range(code: str, ctx: LookupContext) -> SortCodeRange | None:
    """The most specific curated range containing `code` (a clearing bank's allocation, a
    shared range, or an evidence entry)."""
    return _most_specific(code, ctx)


def _most_specific(code: str, ctx: LookupContext) -> SortCodeRange | None:
    for entry in ctx.directory.curated.sort_code_ranges:  # most specific first
        if entry.start <= code <= entry.end:
            return entry
    return None


def _holder(match: SortCodeMatch | None, entry: SortCodeRange | None) -> uk_modulus.Holder | None:
    """Who holds the code, for the modulus check's bank-specific account forms (9 and 10
    digits): exactly from an entry for the code, else only as the range's clearing bank."""
    if match is not None:
        return uk_modulus.Holder(match.institution.name, exact=True)
    if entry is not None and entry.institution is not None and not entry.shared_by:
        return uk_modulus.Holder(entry.institution.name, exact=False)
    return None


class SortCodeRail(FixedCountries):
    rail: ClassVar[Rail] = Rail.SORT_CODE
    countries: ClassVar[frozenset[str] | None] = COUNTRIES

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        return is_digits(compact(raw), 6)

    def parse(self, raw: str, country: str | None) -> str:
        code = compact(raw)
        if not is_digits(code, 6):
            raise invalid(self.rail, "A UK sort code is 6 digits, such as 20-00-00.")
        return code

    def lookup(self, code: str, account_number: str | None, ctx: LookupContext) -> RailOutcome:
        # UK account numbers are 8 digits; 6 to 10 are accepted as some banks still quote them.
        account = digits_account(self.rail, account_number, range(6, 11), "A UK account number")
        match = lookup_sort_code(code, ctx)
        entry = clearing_range(code, ctx)
        if account is not None and uk_modulus.check(
                code, account, holder=_holder(match, entry)) is uk_modulus.Outcome.INVALID:
            raise invalid(self.rail, f"The account number fails the UK modulus check for sort "
                                     f"code {written(code)}: it has a typo or belongs to another "
                                     "sort code.", field="account_number")
        if match is not None:
            return identified(self.rail, match.institution, rails=match.rails,
                              account_number=account)
        if entry is not None and entry.shared_by:
            names = " and ".join(entry.shared_by)
            return not_found(self.rail, f"Sort codes {written(entry.start)} to {written(entry.end)} "
                                        f"are shared by {names}; {written(code)} cannot be "
                                        "attributed without the sort-code directory (EISCD).",
                             country="GB", account_number=account)
        if entry is not None and entry.institution is not None:
            return not_found(self.rail, f"Sort code {written(code)} is in the range "
                                        f"{written(entry.start)} to {written(entry.end)} that "
                                        f"{entry.institution.name} clears, but other institutions "
                                        "(agency banks, building societies, payment firms) hold "
                                        "codes inside clearing banks' ranges, so the range does "
                                        "not say whose this code is. Import the sort-code "
                                        "directory (EISCD) to identify it.",
                             country="GB", account_number=account)
        return not_found(self.rail, "No bank with this sort code is in the directory.",
                         country="GB", account_number=account)
