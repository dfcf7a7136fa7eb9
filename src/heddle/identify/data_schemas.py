"""The formats of the curated data files (src/heddle/identify/data/*.json), as strict pydantic
models: a bad edit fails at start-up (and in the test suite) instead of answering wrong
lookups. heddle.identify.datasets reads the files with them and builds the indexes."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from stdnum.us import rtn

Digits3or5 = Annotated[str, StringConstraints(pattern=r"^(?:[0-9]{3}|[0-9]{5})$")]
Digits6 = Annotated[str, StringConstraints(pattern=r"^[0-9]{6}$")]
BicCode = Annotated[str, StringConstraints(pattern=r"^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}(?:[A-Z0-9]{3})?$")]
Name = Annotated[str, StringConstraints(min_length=2, max_length=200)]
TypeName = Annotated[str, StringConstraints(pattern=r"^[a-z_]{3,40}$")]
RailName = Annotated[str, StringConstraints(pattern=r"^[a-z_]{2,20}$")]
CountryCode = Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}$")]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SwiftEntry(_Entry):
    bic: BicCode
    name: Name
    type: TypeName = "bank"
    city: Name | None = None
    # Names before a merger or renaming, and the short names registries use ("SEB"): a
    # registry entry under this BIC carrying one agrees with it (heddle.identify.bics), and the
    # answer carries the current name.
    other_names: list[Name] = []


class SepaEntry(_Entry):
    country: CountryCode
    sct: Literal["regulated", "voluntary"]
    sct_inst_from: dt.date | None


class RoutingEntry(_Entry):
    routing_number: Annotated[str, StringConstraints(pattern=r"^[0-9]{9}$")]
    name: Name
    type: TypeName
    reachable_rails: list[RailName]

    @model_validator(mode="after")
    def _check_digit(self):
        if not rtn.is_valid(self.routing_number):
            raise ValueError(f"{self.routing_number} fails the ABA check digit")
        return self


class SortCodeEntry(_Entry):
    from_: Digits6 = Field(alias="from")
    to: Digits6
    name: Name | None = None
    type: TypeName | None = None
    bic: BicCode | None = None
    reachable_rails: list[RailName] = []
    shared_by: list[Name] | None = None
    # A range is evidence of its institution only when the source says the whole range is
    # that institution's. A clearing bank's allocation is not: agency banks, building
    # societies and payment firms hold codes inside it.
    sole_owner: bool = False

    @model_validator(mode="after")
    def _shape(self):
        if self.from_ > self.to:
            raise ValueError("range start is after its end")
        if (self.shared_by is None) == (self.name is None or self.type is None):
            raise ValueError("an entry names one bank (name, type) or lists `shared_by`")
        if self.sole_owner and self.shared_by:
            raise ValueError("a shared range has no sole owner")
        return self


class IfscBankEntry(_Entry):
    prefix: Annotated[str, StringConstraints(pattern=r"^[A-Z]{4}$")]
    name: Name
    type: TypeName
    bic: BicCode | None = None
    reachable_rails: list[RailName]
    other_names: list[Name] = []
    # A bank merged into another: its IFSCs were withdrawn, and the successor's are used.
    merged_into: Annotated[str, StringConstraints(pattern=r"^[A-Z]{4}$")] | None = None
    merged_on: dt.date | None = None


class NigerianEntry(_Entry):
    cbn_code: Digits3or5 | None = None
    nip_code: Digits6 | None = None
    name: Name
    type: TypeName
    bic: BicCode | None = None
    nuban_check_digit: bool
    paystack_code: Annotated[str, StringConstraints(pattern=r"^[0-9A-Z]{3,8}$")] | None = None
    reachable_rails: list[RailName]

    @model_validator(mode="after")
    def _codes(self):
        if self.cbn_code is None and self.nip_code is None:
            raise ValueError("an institution needs a cbn_code or a nip_code")
        if self.nuban_check_digit and self.cbn_code is None:
            raise ValueError("the NUBAN check digit needs the CBN institution code")
        return self


class NipEntry(_Entry):
    """A NIBSS NIP institution code (ng_nip_codes.json)."""

    nip_code: Digits6
    name: Name
    type: TypeName
    cbn_code: Digits3or5 | None = None  # links to the ng_institutions.json entry
    source: Literal["banklist-ng", "py-nuban"]


class GhanaEntry(_Entry):
    sort_code: Digits6
    name: Name
    type: TypeName
    bic: BicCode | None = None
    bank_prefix: Annotated[str, StringConstraints(pattern=r"^[0-9]{2}$")] | None = None
    reachable_rails: list[RailName] = []


class MomoEntry(_Entry):
    country: CountryCode
    carriers: list[Annotated[str, StringConstraints(min_length=1, max_length=80)]]
    code: Annotated[str, StringConstraints(pattern=r"^[0-9A-Z]{2,12}$")]
    name: Name
    type: TypeName
    reachable_rails: list[RailName]
    name_resolvers: list[Literal["mtn_momo"]] = []
    paystack_code: Annotated[str, StringConstraints(pattern=r"^[0-9A-Z]{3,8}$")] | None = None
    # True when the operator's wallets are its own network's subscriber numbers, so a number
    # on the network is a number of this wallet service; False where phone-numbered accounts
    # exist at several providers (Nigeria's payment service banks and banks).
    owns_numbering: bool = True


EntryT = TypeVar("EntryT", bound=_Entry)


class _File(BaseModel, Generic[EntryT]):
    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    as_of: dt.date
    licence: Annotated[str, StringConstraints(min_length=2)]
    sources: list[Annotated[str, StringConstraints(min_length=10)]] = Field(min_length=1)
    notes: str
    entries: list[EntryT] = Field(min_length=1)


class IfscSubletFile(_File[IfscBankEntry]):
    """ifsc_razorpay.json: bank codes (`entries`) plus the sub-member maps."""

    sublets: dict[Annotated[str, StringConstraints(pattern=r"^[A-Z]{4}0[A-Z0-9]{6}$")], str]
    sublet_prefixes: dict[Annotated[str, StringConstraints(pattern=r"^[A-Z]{4}(?:0[A-Z0-9]{0,6})?$")],
                          Name]
