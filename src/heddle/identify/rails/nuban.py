"""Nigeria: NUBAN account numbers and the institution codes behind them.

The identifier is an institution code (3-digit CBN bank code, 5-digit CBN code of another
financial institution, the 6-digit NUBAN form of either, or a 6-digit NIBSS NIP code), with
the 10-digit NUBAN in `account_number`; or a NUBAN alone. A NUBAN alone passes the check digit
of several banks, so it is never identified (docs/identify.md: never identified on a guess).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from heddle.identify.checkdigits import (
    is_digits,
    nuban_check_digit,
    nuban_partial_sums,
    nuban_serial_sum,
)
from heddle.identify.datasets import NigerianInstitution
from heddle.identify.rails.base import (
    FixedCountries,
    LookupContext,
    RailOutcome,
    compact,
    digits_account,
    gone,
    identified,
    invalid,
    not_found,
)
from heddle.identify.schemas import Rail


@dataclass(frozen=True, slots=True)
class NubanIdentifier:
    institution_code: str | None = None  # 6-digit NUBAN form or NIP code
    account_number: str | None = None  # a NUBAN sent as the identifier
    # A 6-digit code as sent can be a NIP code or the NUBAN form of a CBN code; a 3- or
    # 5-digit CBN code padded by us can only be the latter.
    may_be_nip: bool = False


class NubanRail(FixedCountries):
    rail: ClassVar[Rail] = Rail.NUBAN
    countries: ClassVar[frozenset[str] | None] = frozenset({"NG"})

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        code = compact(raw)
        return is_digits(code) and len(code) in (3, 5, 6, 10)

    def parse(self, raw: str, country: str | None) -> NubanIdentifier:
        code = compact(raw)
        if not is_digits(code) or len(code) not in (3, 5, 6, 10):
            raise invalid(self.rail, "A Nigerian identifier is a 3-digit bank code, a 5-digit "
                                     "institution code, a 6-digit institution or NIP code, or a "
                                     "10-digit NUBAN account number.")
        if len(code) == 3:
            return NubanIdentifier(institution_code="000" + code)
        if len(code) == 5:
            return NubanIdentifier(institution_code="9" + code)
        if len(code) == 6:
            return NubanIdentifier(institution_code=code, may_be_nip=True)
        return NubanIdentifier(account_number=code)

    def lookup(self, parsed: NubanIdentifier, account_number: str | None,
               ctx: LookupContext) -> RailOutcome:
        if parsed.account_number is not None:
            return self._account_only(parsed.account_number, account_number, ctx)
        account = digits_account(self.rail, account_number, range(10, 11), "A NUBAN account number")
        record, conflict = self._institution(parsed, ctx)
        if conflict is not None:
            return not_found(self.rail, conflict, country="NG", account_number=account)
        if record is None and parsed.institution_code in ctx.directory.curated.ng_inactive:
            code = parsed.institution_code
            return gone(self.rail, ctx.directory.curated.ng_inactive_institutions[code],
                        ctx.directory.curated.ng_inactive[code], country="NG", account_number=account)
        if record is None:
            return not_found(self.rail, f"No Nigerian institution with code "
                                        f"{parsed.institution_code} is in the directory.",
                             country="NG", account_number=account)
        if account is not None and record.check_digit:
            expected = nuban_check_digit(record.nuban_code, account[:9])
            if int(account[9]) != expected:
                raise invalid(self.rail, f"The account number fails the NUBAN check digit of "
                                         f"{record.institution.name}; it has a typo or belongs "
                                         "to another bank.", field="account_number")
        return identified(self.rail, record.institution, account_number=account)

    def _institution(self, parsed: NubanIdentifier,
                     ctx: LookupContext) -> tuple[NigerianInstitution | None, str | None]:
        """The institution of a code, or a detail when the code names two institutions: a
        NIP code of the 000 series can equal another bank's CBN code in NUBAN form (Unity
        Bank's NIP code 000011 is First Bank's 000+011), and neither reading is a guess we
        may bill."""
        code = parsed.institution_code
        curated = ctx.directory.curated
        as_cbn = curated.ng_by_nuban_code.get(code)
        as_nip = curated.ng_by_nip_code.get(code) if parsed.may_be_nip else None
        if as_cbn is not None and as_nip is not None and as_cbn is not as_nip:
            cbn = as_cbn.institution
            return None, (f"{code} is the NIP code of {as_nip.institution.name} and also the "
                          f"NUBAN form of {cbn.name}'s CBN code {cbn.code}, so it does not say "
                          f"which bank is meant. Send the 3-digit CBN code ({cbn.code} for "
                          f"{cbn.name}) to choose.")
        return as_cbn or as_nip, None

    def _account_only(self, number: str, account_number: str | None,
                      ctx: LookupContext) -> RailOutcome:
        serial_sum = nuban_serial_sum(number[:9])
        check = int(number[9])
        candidates = sum(
            1 for record in ctx.directory.curated.ng_check_digit_institutions
            if (10 - (nuban_partial_sums(record.nuban_code) + serial_sum) % 10) % 10 == check
        )
        how = ("Send the bank's code as `identifier` and this number as `account_number` to "
               "identify the account.")
        if candidates:
            detail = (f"This NUBAN passes the check digit of {candidates} institutions in the "
                      f"directory, so the bank cannot be told from the number alone. {how}")
        else:
            detail = ("This number fails the NUBAN check digit of every institution in the "
                      f"directory; it may belong to one that is not listed. {how}")
        account = digits_account(self.rail, account_number, range(10, 11), "A NUBAN account number")
        return not_found(self.rail, detail, country="NG", account_number=account)
