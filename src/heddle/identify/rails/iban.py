"""IBAN (ISO 13616): validated by schwifty (country length, structure, mod-97 check digits and,
where schwifty knows the algorithm, the national check digits). The bank comes from schwifty's
bank registry; SEPA reachability from the curated `sepa.json`."""

from __future__ import annotations

import datetime as dt
import re
import warnings
from functools import lru_cache
from importlib import metadata
from typing import ClassVar

from schwifty import BIC, IBAN
from schwifty import registry as schwifty_registry
from schwifty.exceptions import (
    InvalidChecksumDigits,
    InvalidCountryCode,
    InvalidLength,
    NationalChecksumNotVerified,
    SchwiftyException,
)

from heddle.identify.bics import BicHolder, canonical, names_agree, registry_entries
from heddle.identify.rails.base import (
    FixedCountries,
    LookupContext,
    RailOutcome,
    compact,
    identified,
    invalid,
    merge_rails,
    not_found,
    unsupported,
)
from heddle.identify.rails.sort_code import clearing_range, lookup_sort_code
from heddle.identify.schemas import DataSource, Institution, Rail

# Countries whose national check digits schwifty cannot verify are still valid IBANs.
warnings.filterwarnings("ignore", category=NationalChecksumNotVerified)

_SHAPE = re.compile(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}", re.ASCII)


def _registry_source() -> DataSource:
    """schwifty's bank registries, dated by its calendar version (2026.10.1: October 2026)."""
    version = metadata.version("schwifty")
    year, month, *_ = (int(part) for part in version.split(".")[:2])
    return DataSource(f"schwifty {version}", dt.date(year, month, 1))


REGISTRY_SOURCE = _registry_source()
_REGISTRY_COUNTRIES = frozenset(schwifty_registry.get_countries())


@lru_cache(maxsize=128)
def _keyed(country: str) -> bool:
    """True when the country's registry is keyed by bank code (SA's lists banks by BIC only)."""
    return any(b.bank_code for b in schwifty_registry.get_banks_by_country(country))


@lru_cache(maxsize=16384)
def _bic_of(country: str, lookup_key: str) -> str | None:
    """The most generic BIC of a bank code (what `IBAN.bic` gives; slow for FR, so cached)."""
    try:
        code = BIC.from_bank_code(country, lookup_key).compact
    except SchwiftyException:
        return None
    return code[:8] if code.endswith("XXX") else code  # XXX is the head office's 8-char BIC


class IbanRail(FixedCountries):
    rail: ClassVar[Rail] = Rail.IBAN
    countries: ClassVar[frozenset[str] | None] = None

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        return bool(_SHAPE.fullmatch(compact(raw)))

    def parse(self, raw: str, country: str | None) -> IBAN:
        code = compact(raw)
        if not _SHAPE.fullmatch(code):
            raise invalid(self.rail, "An IBAN is a 2-letter country code, 2 check digits and up "
                                     "to 30 letters or digits (15 to 34 characters in all).")
        try:
            return IBAN(code, validate_bban=True)
        except InvalidCountryCode:
            raise invalid(self.rail, f"{code[:2]} is not a country that issues IBANs.") from None
        except InvalidLength:
            raise invalid(self.rail, f"Wrong length for an IBAN of {code[:2]}.",
                          length=len(code)) from None
        except InvalidChecksumDigits:
            raise invalid(self.rail, "The IBAN check digits do not match; the IBAN has a typo.") from None
        except SchwiftyException as exc:
            raise invalid(self.rail, f"Not a valid IBAN: {exc}.") from None

    def lookup(self, iban: IBAN, account_number: str | None, ctx: LookupContext) -> RailOutcome:
        country = iban.country_code
        if country not in _REGISTRY_COUNTRIES:
            return unsupported(self.rail, f"The IBAN is valid, but no bank directory for {country} "
                                          "is available.", country=country)
        if not _keyed(country):
            return unsupported(self.rail, f"The IBAN is valid, but the {country} directory "
                                          "available lists banks by BIC only, with no bank "
                                          f"codes, so bank code {iban.bank_code} cannot be "
                                          "looked up.", country=country)
        bank = iban.bank
        if bank is None:
            return not_found(self.rail, f"The IBAN is valid, but no bank with code "
                                        f"{iban.bank_code} is in the {country} directory.",
                             country=country, account_number=account_number)
        bic = _bic_of(country, bank.bank_code)  # a registry bank's code is its lookup key
        institution = Institution(name=bank.name, type="bank", code=iban.bank_code,
                                  country=country, bic=bic, source=REGISTRY_SOURCE)
        if bic is not None:
            holder, _ = ctx.directory.bic_holder(bic)
            if holder is not None:
                checked = _checked_against(holder, bank.name, bic, iban.bank_code, country)
                if isinstance(checked, str):
                    return not_found(self.rail, checked, country=country,
                                     account_number=account_number)
                institution = checked
        return identified(self.rail, institution, rails=self._rails(iban, bic, ctx),
                          account_number=account_number)

    def _rails(self, iban: IBAN, bic: str | None, ctx: LookupContext) -> tuple[str, ...]:
        rails: tuple[str, ...] = ()
        sepa = ctx.directory.curated.sepa.get(iban.country_code)
        if sepa is not None and sepa.sct == "regulated":
            rails = ("sepa",)
            if sepa.sct_inst_from is not None and sepa.sct_inst_from <= ctx.today:
                rails = ("sepa", "sepa_instant")
        if iban.country_code == "GB" and iban.branch_code:
            # A UK IBAN embeds the sort code; its rails apply when it names the same bank. The
            # IBAN's bank code names the bank, so the clearing bank's range is enough here.
            by_sort_code = lookup_sort_code(iban.branch_code, ctx)
            holder = by_sort_code.institution if by_sort_code is not None else None
            if holder is None:
                entry = clearing_range(iban.branch_code, ctx)
                holder = entry.institution if entry is not None else None
            if holder is not None and holder.bic is not None and holder.bic[:4] == iban.bank_code:
                rails = merge_rails(rails, holder.reachable_rails)
        return rails


def _checked_against(holder: BicHolder, name: str, bic: str, bank_code: str,
                     country: str) -> Institution | str:
    """The bank code's institution when its registry entry agrees with the BIC-keyed holder
    of its BIC (then one record: the holder's name, type and BIC), else why not.

    Where they disagree the registry may still be right about the bank code (a member bank
    routing through its central bank's BIC) or wrong (a stale or misattributed entry). When
    the bank code is the only one routed through the BIC, it is the holder's own code and the
    holder is named; otherwise nothing is."""
    if names_agree(name, holder.institution, holder.other_names):
        return canonical(holder, code=bank_code, bic=bic if len(bic) == 11 else None)
    codes = {b.bank_code for b in registry_entries(bic) if b.country_code == country}
    if codes <= {bank_code}:
        return canonical(holder, code=bank_code)
    return (f"The {country} directory lists bank code {bank_code} as {name}, routed through "
            f"BIC {bic}, which belongs to {holder.institution.name}; {len(codes)} bank codes "
            "route through that BIC (merged or member banks among them), so which institution "
            "holds this account is not known. Ask the payee for the BIC of their bank.")
