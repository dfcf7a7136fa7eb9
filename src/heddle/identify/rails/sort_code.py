"""UK sort codes: six digits, written 12-34-56. Imported rows win; otherwise the most specific
curated range containing the code names the bank."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import ClassVar

from heddle.identify.checkdigits import is_digits
from heddle.identify.rails.base import (
    LookupContext,
    RailOutcome,
    compact,
    digits_account,
    identified,
    invalid,
    not_found,
)
from heddle.identify.schemas import Institution, Rail

COUNTRIES = frozenset({"GB", "GG", "JE", "IM"})  # Crown Dependencies use UK sort codes
# The way sort codes are written in the UK (12-34-56); no other rail's codes are.
UK_WRITTEN_FORM = re.compile(r"[0-9]{2}-[0-9]{2}-[0-9]{2}", re.ASCII)


@dataclass(frozen=True, slots=True)
class SortCodeMatch:
    institution: Institution
    rails: tuple[str, ...]


def lookup_sort_code(code: str, ctx: LookupContext) -> SortCodeMatch | None:
    """The institution of a sort code, or None (also for ranges shared by several banks)."""
    record = ctx.directory.imported(Rail.SORT_CODE, code)
    curated = _curated_range(code, ctx)
    curated_inst = curated.institution if curated is not None else None
    if record is not None:
        return SortCodeMatch(record.institution, record.rails_with(curated_inst))
    if curated_inst is None:
        return None
    return SortCodeMatch(dataclasses.replace(curated_inst, code=code), curated_inst.reachable_rails)


def _curated_range(code: str, ctx: LookupContext):
    for entry in ctx.directory.curated.sort_code_ranges:  # most specific first
        if entry.start <= code <= entry.end:
            return entry
    return None


class SortCodeRail:
    rail: ClassVar[Rail] = Rail.SORT_CODE
    countries: ClassVar[frozenset[str] | None] = COUNTRIES

    def looks_like(self, raw: str, country: str | None) -> bool:
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
        if match is not None:
            return identified(self.rail, match.institution, rails=match.rails,
                              account_number=account)
        shared = _curated_range(code, ctx)
        if shared is not None and shared.shared_by:
            names = " and ".join(shared.shared_by)
            return not_found(self.rail, f"Sort codes {code[:2]}-xx-xx are shared by {names}; "
                                        "this one cannot be attributed without the sort-code "
                                        "directory.", country="GB", account_number=account)
        return not_found(self.rail, "No bank with this sort code is in the directory.",
                         country="GB", account_number=account)
