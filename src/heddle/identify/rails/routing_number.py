"""ABA routing transit numbers: 9 digits, 3-7-1 check digit (python-stdnum), and a Federal
Reserve routing symbol (first two digits) that is actually assigned."""

from __future__ import annotations

from typing import ClassVar

from stdnum.us import rtn

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
    keep_curated_type,
    not_found,
)
from heddle.identify.schemas import Rail

# 00 US Government, 01-12 Federal Reserve districts, 21-32 thrift institutions,
# 61-72 electronic transactions, 80 traveler's cheques.
_ASSIGNED_PREFIXES = frozenset(
    [f"{n:02d}" for n in range(13)] + [f"{n:02d}" for n in range(21, 33)]
    + [f"{n:02d}" for n in range(61, 73)] + ["80"]
)


class RoutingNumberRail(FixedCountries):
    rail: ClassVar[Rail] = Rail.ROUTING_NUMBER
    countries: ClassVar[frozenset[str] | None] = frozenset({"US"})

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        return is_digits(compact(raw), 9)

    def parse(self, raw: str, country: str | None) -> str:
        number = compact(raw)
        if not is_digits(number, 9):
            raise invalid(self.rail, "An ABA routing number is 9 digits.")
        if number[:2] not in _ASSIGNED_PREFIXES:
            raise invalid(self.rail, f"Routing numbers never start with {number[:2]} (the Federal "
                                     "Reserve routing symbol must be 00-12, 21-32, 61-72 or 80).")
        if not rtn.is_valid(number):
            raise invalid(self.rail, "The routing number's check digit does not match; it has a typo.")
        return number

    def lookup(self, number: str, account_number: str | None, ctx: LookupContext) -> RailOutcome:
        account = digits_account(self.rail, account_number, range(4, 18), "A US account number")
        # Imported FedACH rows win for name and city; curated rails are added to theirs, and
        # the curated type is kept (FedACH does not say what kind of institution it is).
        hit = find_code(ctx, self.rail, number, ctx.directory.curated.routing_numbers.get(number),
                        merge=keep_curated_type)
        if hit is not None:
            return found(self.rail, hit, account_number=account)
        return not_found(self.rail, "The routing number is valid, but no institution with it is in "
                                    "the directory; import the FedACH directory to cover every bank.",
                         country="US", account_number=account)
