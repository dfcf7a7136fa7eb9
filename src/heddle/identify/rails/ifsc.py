"""Indian Financial System Code: 4-letter bank code, a reserved '0', 6-character branch code.

The bank comes from the shipped bank codes (curated, then Razorpay's MIT list); the branch,
its city and its rails (NEFT/RTGS/IMPS/UPI per branch) from imported IFSC rows, else from the
shipped IFSC list (importers/ifsc_list.py). Sub-member codes (a sponsor bank's codes leased to a
co-operative bank) name the holder from Razorpay's sub-member maps; a sponsor's code that
looks like its sub-member codes but is in no map is `not_found`, naming the sponsor."""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from heddle.identify.datasets import branch_shape
from heddle.identify.rails.base import (
    FixedCountries,
    LookupContext,
    RailOutcome,
    compact,
    digits_account,
    find_code,
    found,
    identified,
    invalid,
    not_found,
)
from heddle.identify.rails.base import (
    gone as gone_answer,
)
from heddle.identify.schemas import Rail, Status, Successor

_IFSC = re.compile(r"[A-Z]{4}0[A-Z0-9]{6}", re.ASCII)
_SHAPE = re.compile(r"[A-Z]{4}[A-Z0-9]{7}", re.ASCII)


class IfscRail(FixedCountries):
    rail: ClassVar[Rail] = Rail.IFSC
    countries: ClassVar[frozenset[str] | None] = frozenset({"IN"})

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        code = compact(raw)
        return bool(_SHAPE.fullmatch(code)) and code[4] == "0"

    def parse(self, raw: str, country: str | None) -> str:
        code = compact(raw)
        if len(code) != 11:
            raise invalid(self.rail, "An IFSC has 11 characters, such as SBIN0000300.", length=len(code))
        if not _IFSC.fullmatch(code):
            raise invalid(
                self.rail, "An IFSC is 4 letters (the bank), the digit 0, then 6 letters or digits (the branch)."
            )
        return code

    def lookup(self, code: str, account_number: str | None, ctx: LookupContext) -> RailOutcome:
        # Indian bank account numbers run from 9 to 18 digits depending on the bank.
        account = digits_account(self.rail, account_number, range(9, 19), "An Indian account number")
        curated = ctx.directory.curated
        record = ctx.directory.imported(self.rail, code)
        # One search of the shipped list answers both "is it withdrawn?" and "which branch?".
        shipped = ctx.directory.ifsc_branches.branch(code)
        gone = _withdrawn(code, record is not None or shipped is not None, ctx)
        if gone is not None and code[:4] in curated.ifsc_merged:
            heir_code, _ = curated.ifsc_merged[code[:4]]
            heir = curated.ifsc_banks.get(heir_code)
            former = dataclasses.replace(curated.ifsc_banks[code[:4]], status=Status.MERGED,
                                         successor=Successor(heir.name if heir else None, heir_code))
            return gone_answer(self.rail, former, gone, country="IN", account_number=account)
        if gone is not None:
            return not_found(self.rail, gone, country="IN", account_number=account)
        # A sub-member code belongs to the bank that leases it, whatever its first four
        # letters (and the RBI list files it under the sponsor bank's name).
        holder = curated.ifsc_sublets.holder(code)
        bank = holder or curated.ifsc_banks.get(code[:4])
        leased_shape = (
            holder is None
            and bank is not None
            and branch_shape(code) in curated.ifsc_sublets.sponsor_shapes.get(code[:4], ())
        )
        if leased_shape:
            # The RBI list files sub-member codes under the sponsor's name, so an imported
            # row or a shipped branch is no better evidence here than the bank code.
            listed = record.branch if record is not None else shipped.name if shipped else None
            listed = f" The directory lists it as branch {listed!r}." if listed else ""
            return not_found(
                self.rail,
                f"{code} is in the IFSC series of {bank.name}, which "
                "leases codes shaped like this one to sub-member banks "
                "(co-operative and regional banks); this code is in no "
                "sub-member list, so whose it is is not known. "
                f"{bank.name} is the sponsor bank that settles for it."
                f"{listed}",
                country="IN",
                account_number=account,
            )
        # Imported rows win for the branch, city and rails; the bank fills the BIC and type,
        # and names the holder of a sub-member code.
        hit = find_code(ctx, self.rail, code, bank, merge=lambda row, bank: dataclasses.replace(
            row, bic=row.bic or bank.bic, type=bank.type, name=holder.name if holder else row.name))
        if hit is None:
            return not_found(
                self.rail,
                f"No bank with IFSC bank code {code[:4]} is in the directory.",
                country="IN",
                account_number=account,
            )
        if hit.record is not None:
            institution = dataclasses.replace(hit.institution, branch=hit.record.branch)
            return found(self.rail, dataclasses.replace(hit, institution=institution), account_number=account)
        # The holder of a sub-member code, or the bank the first four letters name (it leases
        # no codes of this shape); the shipped list adds the branch, its city and its rails.
        if shipped is None:
            return identified(self.rail, dataclasses.replace(bank, code=code), account_number=account)
        institution = dataclasses.replace(bank, code=code, branch=shipped.name, city=shipped.city or bank.city,
                                          source=ctx.directory.ifsc_branches.source)
        return identified(self.rail, institution, rails=shipped.rails, account_number=account)


def _withdrawn(code: str, listed: bool, ctx: LookupContext) -> str | None:
    """Why an IFSC no longer exists, or None: its bank merged into another (every code of it
    was withdrawn), or RBI's list gives its bank's branches and this code is not among them.
    `listed`: an imported row or the shipped list has the code."""
    curated = ctx.directory.curated
    merged = curated.ifsc_merged.get(code[:4])
    if merged is not None:
        successor, when = merged
        gone = curated.ifsc_banks[code[:4]].name
        heir = curated.ifsc_banks.get(successor)
        heir_name = heir.name if heir else successor
        since = f" on {when.isoformat()}" if when else ""
        return (
            f"{gone} was amalgamated into {heir_name}{since} and its IFSCs were withdrawn; "
            f"the branch now has an IFSC of {heir_name} (bank code {successor}). Ask the payee "
            "for it."
        )
    branches = ctx.directory.ifsc_branches
    if listed or not branches.covers(code[:4]):
        return None
    bank = curated.ifsc_banks.get(code[:4])
    whose = f"{bank.name}'s" if bank else f"bank code {code[:4]}'s"
    return (
        f"No branch has this IFSC: it is not among {whose} "
        f"{branches.banks()[code[:4]]:,} IFSCs in RBI's list "
        f"(as of {branches.as_of.isoformat()})."
    )
