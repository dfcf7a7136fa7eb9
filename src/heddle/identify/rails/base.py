"""What every rail module provides, and the helpers they share."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from heddle.errors import HeddleError
from heddle.identify.directory import Directory, DirectoryRecord
from heddle.identify.schemas import DataSource, Institution, Rail, ResultKind, Status, Successor

_SEPARATORS = re.compile(r"[\s\-]+")


def compact(raw: str) -> str:
    """Drop spaces and dashes, uppercase: '20-00-00' -> '200000', 'gb82 west' -> 'GB82WEST'."""
    return _SEPARATORS.sub("", raw).upper()


def invalid(rail: Rail, message: str, *, field: str = "identifier", **details: Any) -> HeddleError:
    return HeddleError("invalid_identifier", message,
                       details={"rail": rail.value, "field": field, **details})


@dataclass(frozen=True, slots=True)
class LookupContext:
    directory: Directory
    today: dt.date


@dataclass(frozen=True, slots=True)
class RailOutcome:
    """A rail's answer before holder-name resolution.

    `account_number` is the normalised account or wallet number, set when one was given and
    validated for this rail."""

    result: ResultKind
    rail: Rail
    country: str | None = None
    institution: Institution | None = None
    reachable_rails: tuple[str, ...] = ()
    account_number: str | None = None
    detail: str | None = None
    # An institution the identifier may belong to but does not prove (a phone number's
    # network's wallet); named only if holder-name resolution confirms it.
    candidate: Institution | None = None
    # A `not_found` answer about an institution that merged or closed: what it became.
    status: Status | None = None
    successor: Successor | None = None
    source: DataSource | None = None


class RailHandler(Protocol):
    rail: ClassVar[Rail]

    def served(self, ctx: LookupContext) -> frozenset[str] | None:
        """Countries whose identifiers the rail reads; None when any country's can appear."""

    def looks_like(self, raw: str, country: str | None, ctx: LookupContext) -> bool:
        """A cheap shape test used by rail detection (no check digits, no lookups)."""

    def parse(self, raw: str, country: str | None) -> Any:
        """Normalise and validate; raise `invalid_identifier` for malformed input."""

    def lookup(self, parsed: Any, account_number: str | None, ctx: LookupContext) -> RailOutcome:
        """Find the institution; raise `invalid_identifier` for a malformed account number."""


class FixedCountries:
    """A rail whose countries are fixed (`countries`, a class attribute)."""

    countries: ClassVar[frozenset[str] | None] = None

    def served(self, ctx: LookupContext) -> frozenset[str] | None:
        return self.countries


@dataclass(frozen=True, slots=True)
class Found:
    """An institution found for one code, with its rails and a note from its directory."""

    institution: Institution
    rails: tuple[str, ...]
    note: str | None = None
    record: DirectoryRecord | None = None  # the imported row it came from, if any


def keep_curated_type(imported: Institution, curated: Institution) -> Institution:
    """An imported directory that does not say what kind of institution it lists (FedACH,
    EISCD): the curated type is kept."""
    return dataclasses.replace(imported, type=curated.type)


def find_code(ctx: LookupContext, rail: Rail, code: str, curated: Institution | None, *,
              merge: Callable[[Institution, Institution], Institution] | None = None) -> Found | None:
    """The one lookup every rail makes: an imported row for the exact code, then the curated
    (shipped) entry, then nothing (the rail answers `not_found`).

    An imported row wins for name and city; the curated entry's rails are added to the row's
    (unless the row's are exhaustive), and `merge(imported, curated)` lets a rail keep what
    the curated entry knows better."""
    record = ctx.directory.imported(rail, code)
    if record is not None:
        institution = record.institution
        if curated is not None and merge is not None:
            institution = merge(institution, curated)
        return Found(institution, record.rails_with(curated), record.note, record)
    if curated is not None:
        return Found(curated, curated.reachable_rails)
    return None


def found(rail: Rail, hit: Found, *, account_number: str | None = None) -> RailOutcome:
    """The `identified` outcome of a `find_code` hit."""
    return identified(rail, hit.institution, rails=hit.rails, account_number=account_number,
                      detail=hit.note)


def identified(rail: Rail, institution: Institution, *, rails: tuple[str, ...] | None = None,
               account_number: str | None = None, detail: str | None = None) -> RailOutcome:
    return RailOutcome(
        ResultKind.IDENTIFIED, rail, institution.country, institution,
        institution.reachable_rails if rails is None else rails, account_number, detail,
    )


def gone(rail: Rail, institution: Institution, detail: str, *, country: str | None = None,
         account_number: str | None = None) -> RailOutcome:
    """The answer for a code whose institution merged or closed: `not_found` (not billed: the
    code no longer leads to an institution that takes payments), with its status, successor
    and source (billing rule in docs/identify.md)."""
    return RailOutcome(ResultKind.NOT_FOUND, rail, country or institution.country or None, None, (),
                       account_number, detail, status=institution.status,
                       successor=institution.successor, source=institution.source)


def not_found(rail: Rail, detail: str, *, country: str | None = None,
              account_number: str | None = None) -> RailOutcome:
    return RailOutcome(ResultKind.NOT_FOUND, rail, country, None, (), account_number, detail)


def unsupported(rail: Rail, detail: str, *, country: str | None = None) -> RailOutcome:
    return RailOutcome(ResultKind.UNSUPPORTED, rail, country, None, (), None, detail)


def merge_rails(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """Union keeping first-seen order."""
    return tuple(dict.fromkeys(r for group in groups for r in group))


def digits_account(rail: Rail, account_number: str | None, lengths: range, what: str) -> str | None:
    """Validate an account number made of ASCII digits whose length is in `lengths`."""
    if account_number is None:
        return None
    if not (account_number.isascii() and account_number.isdigit()) or len(account_number) not in lengths:
        size = (f"{lengths.start}" if len(lengths) == 1
                else f"{lengths.start} to {lengths.stop - 1}")
        raise invalid(rail, f"{what} is {size} digits", field="account_number")
    return account_number
