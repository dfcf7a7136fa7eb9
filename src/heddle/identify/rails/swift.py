"""SWIFT BIC (ISO 9362): 4-letter institution code, 2-letter country, 2-character location,
optional 3-character branch."""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from schwifty import BIC
from schwifty.exceptions import InvalidCountryCode, SchwiftyException

from heddle.identify.bics import describe_entries, registry_entries
from heddle.identify.rails.base import (
    FixedCountries,
    LookupContext,
    RailOutcome,
    compact,
    gone,
    identified,
    invalid,
    not_found,
)
from heddle.identify.schemas import BANKING_COUNTRIES, Institution, Rail, Status

_BIC = re.compile(r"[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}(?:[A-Z0-9]{3})?", re.ASCII)
# Country codes SWIFT uses that are not (yet) ISO 3166-1 alpha-2: XK, Kosovo (user-assigned).
SWIFT_EXTRA_COUNTRIES = BANKING_COUNTRIES
_SHAPE = re.compile(r"[A-Z]{6}[A-Z0-9]{2}(?:[A-Z0-9]{3})?", re.ASCII)


class SwiftRail(FixedCountries):
    rail: ClassVar[Rail] = Rail.SWIFT
    countries: ClassVar[frozenset[str] | None] = None

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        return bool(_SHAPE.fullmatch(compact(raw)))

    def parse(self, raw: str, country: str | None) -> str:
        code = compact(raw)
        if len(code) not in (8, 11):
            raise invalid(self.rail, "A BIC has 8 or 11 characters.", length=len(code))
        if not _BIC.fullmatch(code):
            raise invalid(self.rail, "A BIC is a 4-letter institution code, a 2-letter country "
                                     "code, a 2-character location code and an optional "
                                     "3-character branch code.")
        try:
            BIC(code)
        except InvalidCountryCode:
            # ISO 9362 also allows country codes outside ISO 3166-1 that SWIFT assigned, such
            # as XK (Kosovo); schwifty knows only the ISO list.
            if code[4:6] not in SWIFT_EXTRA_COUNTRIES:
                raise invalid(self.rail, f"Not a valid BIC: {code[4:6]} is not a country "
                                         "code.") from None
        except SchwiftyException as exc:
            raise invalid(self.rail, f"Not a valid BIC: {exc}.") from None
        return code

    def lookup(self, bic: str, account_number: str | None, ctx: LookupContext) -> RailOutcome:
        country = bic[4:6]
        holder, _ = ctx.directory.bic_holder(bic)
        if holder is None:
            return not_found(self.rail, _unknown_detail(bic), country=country,
                             account_number=account_number)
        if holder.institution.status is not Status.ACTIVE:
            return gone(self.rail, holder.institution, _gone_detail(bic, holder.institution),
                        country=country, account_number=account_number)
        # A branch BIC not listed on its own is its BIC8's institution (ISO 9362: the branch
        # code names a branch of the institution the first 8 characters identify).
        institution = dataclasses.replace(holder.institution, code=bic, bic=bic,
                                          reachable_rails=())
        # Location codes whose second character is '0' are test BICs, '1' passive
        # participants: neither can receive SWIFT messages.
        connected = bic[7] not in "01"
        return identified(self.rail, institution, rails=("swift",) if connected else (),
                          account_number=account_number)


def _gone_detail(bic: str, institution: Institution) -> str:
    what = "merged into another institution" if institution.status is Status.MERGED else "closed"
    after = ""
    if institution.successor is not None:
        heir = institution.successor
        named = heir.name or "its successor"
        after = f"; its successor is {named}" + (f" (LEI {heir.code})" if heir.code else "")
    return (f"{bic} belongs to {institution.name}, which GLEIF's LEI records say has {what}{after}. "
            "Ask the payee for their bank's current BIC.")


def _unknown_detail(bic: str) -> str:
    """What is known of a BIC that no BIC-keyed source lists: the registry entries that route
    through it are named, as routing, never as the holder."""
    entries = registry_entries(bic)
    if not entries:
        return "No institution with this BIC is in the directory."
    return (f"No BIC-keyed source lists {bic[:8]}. The {bic[4:6]} bank-code directory routes "
            f"payments for {describe_entries(entries)} through it, but a bank-code directory "
            "does not say who holds a BIC (merged banks and member banks are listed under "
            "another bank's BIC), so no institution is named.")
