"""Mobile-money wallets: a mobile number (E.164, or national with `country`) whose network runs
a mobile-money service. Parsing, validity and the network come from libphonenumber
(`phonenumbers`); the operator from the curated `momo_operators.json`."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import ClassVar

import phonenumbers
from phonenumbers import PhoneMetadata, PhoneNumber, PhoneNumberFormat, PhoneNumberType, carrier

from heddle.identify.checkdigits import is_digits
from heddle.identify.rails.base import (
    LookupContext,
    RailOutcome,
    compact,
    identified,
    invalid,
    not_found,
    unsupported,
)
from heddle.identify.schemas import Rail

_MOBILE_TYPES = frozenset({PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE_OR_MOBILE})


def e164(number: PhoneNumber) -> str:
    return phonenumbers.format_number(number, PhoneNumberFormat.E164)


def _parse(text: str, region: str | None) -> PhoneNumber | None:
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None
    return number if phonenumbers.is_valid_number(number) else None


def _international(digits: str) -> PhoneNumber | None:
    """A number written in international form without its '+' (e.g. 233241234567)."""
    return _parse("+" + digits, None) if is_digits(digits) and len(digits) >= 11 else None


class MomoRail:
    rail: ClassVar[Rail] = Rail.MOMO

    def served(self, ctx: LookupContext) -> frozenset[str]:
        return ctx.directory.curated.momo_countries

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        text = compact(raw)
        if text.startswith("+"):
            return is_digits(text[1:]) and 7 <= len(text) - 1 <= 15
        if not is_digits(text) or not 6 <= len(text) <= 15:
            return False
        if country is not None or _international(text) is not None:
            return True
        # A number in national form (trunk prefix 0) without `country`: plausible when some
        # covered country reads it as a mobile number (detection then asks for `country`).
        return text.startswith("0") and any(
            _is_mobile(_parse(text, region))
            for region in _regions_for_length(ctx.directory.curated.momo_countries, len(text)))

    def parse(self, raw: str, country: str | None) -> PhoneNumber:
        text = compact(raw)
        if not (text.startswith("+") and is_digits(text[1:])) and not is_digits(text):
            raise invalid(self.rail, "A wallet number is a phone number: digits, optionally "
                                     "starting with + and the country calling code.")
        if text.startswith("+"):
            number = _parse(text, None)
        elif country is not None:
            number = _parse(text, country)
        else:
            number = _international(text)
            if number is None:
                raise invalid(self.rail, "A national wallet number needs `country`; or send it in "
                                         "international form, such as +233241234567.",
                              needs="country")
        if number is None:
            where = f" in {country}" if country and not text.startswith("+") else ""
            raise invalid(self.rail, f"Not a valid phone number{where}.")
        if not _is_mobile(number):
            raise invalid(self.rail, "The number is not a mobile number, so it cannot be a "
                                     "mobile-money wallet.")
        return number

    def lookup(self, number: PhoneNumber, account_number: str | None,
               ctx: LookupContext) -> RailOutcome:
        region = phonenumbers.region_code_for_number(number)
        account = self._same_wallet(number, region, account_number)
        if region not in ctx.directory.curated.momo_countries:
            return unsupported(self.rail, f"Mobile-money operators in {region} are not covered.",
                               country=region)
        network = carrier.name_for_number(number, "en")
        operator = ctx.directory.curated.momo_operators.get((region, network))
        if operator is None:
            what = f"the {network} network" if network else "its network"
            return not_found(self.rail, f"The number is a valid {region} mobile number, but "
                                        f"{what} runs no mobile-money service in the directory.",
                             country=region, account_number=account)
        if not operator.owns_numbering:
            # Phone-numbered accounts exist at several providers here: the network is not
            # the wallet. Holder-name resolution at the network's provider can confirm it.
            return dataclasses.replace(not_found(
                self.rail, f"The number is on the {network} network in {region}, but "
                           f"{operator.institution.name} does not own its numbering: a "
                           "phone-numbered account can be at any payment service bank or bank, "
                           "and this number need not have a wallet there. Send "
                           "`account_number` to confirm it by holder-name resolution.",
                country=region, account_number=account), candidate=operator.institution)
        return identified(self.rail, operator.institution, account_number=account)

    def _same_wallet(self, number: PhoneNumber, region: str, account_number: str | None) -> str | None:
        """The wallet in E.164 when `account_number` names the same wallet as `identifier`."""
        if account_number is None:
            return None
        other = _international(account_number)
        if other is None or e164(other) != e164(number):
            other = _parse(account_number, region)
        if other is None or e164(other) != e164(number):
            raise invalid(self.rail, "For a wallet, `account_number` must be the same phone "
                                     "number as `identifier`.", field="account_number")
        return e164(number)


@cache
def _regions_for_length(covered: frozenset[str], length: int) -> tuple[str, ...]:
    """Covered countries where a mobile number written nationally has `length` digits (the
    trunk prefix included), so detection parses only where the number could fit."""
    regions = []
    for region in sorted(covered):
        metadata = PhoneMetadata.metadata_for_region(region)
        if metadata is None or metadata.mobile is None:
            continue
        trunk = len(metadata.national_prefix or "")
        if any(n + trunk == length for n in metadata.mobile.possible_length or ()):
            regions.append(region)
    return tuple(regions)


def _is_mobile(number: PhoneNumber | None) -> bool:
    return number is not None and phonenumbers.number_type(number) in _MOBILE_TYPES
