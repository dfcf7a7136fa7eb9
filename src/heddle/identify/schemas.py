"""The Identify request, the institution record and the Identify Result.

`Identification.to_dict()` is the `data` of the Identify response: every unknown field is
omitted rather than sent as null (spec, "Identify Result"). `IdentifyResult` below is the read
model that the route validates it against and the OpenAPI document publishes.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import pycountry
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, field_validator, model_validator

from heddle.api.envelope import ReadModel


class Rail(StrEnum):
    SWIFT = "swift"
    IBAN = "iban"
    ROUTING_NUMBER = "routing_number"
    SORT_CODE = "sort_code"
    IFSC = "ifsc"
    NUBAN = "nuban"
    MOMO = "momo"
    GH_BANK = "gh_bank"


class ResultKind(StrEnum):
    IDENTIFIED = "identified"
    NOT_FOUND = "not_found"
    UNSUPPORTED = "unsupported"


class NameResolutionStatus(StrEnum):
    RESOLVED = "resolved"
    UNAVAILABLE = "unavailable"
    NOT_SUPPORTED = "not_supported"


# Rails on which the spec allows holder-name resolution.
NAME_RESOLUTION_RAILS = frozenset({Rail.NUBAN, Rail.MOMO, Rail.GH_BANK})

_ACCOUNT_SEPARATORS = re.compile(r"[\s\-]+")
_ACCOUNT_CHARS = re.compile(r"[A-Z0-9]{1,34}", re.ASCII)


# User-assigned codes that banking uses as countries: XK (Kosovo) in BICs and IBANs.
BANKING_COUNTRIES = frozenset({"XK"})


def is_country(code: str) -> bool:
    """True for an ISO 3166-1 alpha-2 code (uppercase), or XK (Kosovo) as banking uses it."""
    return (
        len(code) == 2
        and code.isascii()
        and (code in BANKING_COUNTRIES or pycountry.countries.get(alpha_2=code) is not None)
    )


class IdentifyRequest(BaseModel):
    """Body of POST /v1/identify."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "examples": [
                {"identifier": "DEUTDEFF"},
                {"identifier": "0123456789", "rail": "nuban", "account_number": "0123456789"},
            ]
        },
    )

    identifier: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)] = Field(
        description="BIC, IBAN, routing number, sort code, IFSC, bank code or wallet number."
    )
    rail: Rail | None = Field(None, description="The rail; detected from the identifier when absent.")
    country: str | None = Field(None, description="ISO 3166-1 alpha-2 hint, such as GB or NG.")
    account_number: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="When present, holder-name resolution is attempted on nuban, momo and gh_bank."
    )
    # The account number exactly as the caller wrote it: `account.number` echoes it (spec,
    # "Identify Result"), while lookups and check digits use the compact `account_number`.
    _account_number_sent: str | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_sent(cls, data: Any, handler):
        sent = data.get("account_number") if isinstance(data, dict) else None
        model = handler(data)
        if isinstance(sent, str):
            model._account_number_sent = sent  # byte for byte, surrounding spaces included
        return model

    @property
    def account_number_sent(self) -> str | None:
        """`account_number` exactly as sent, or None."""
        if self.account_number is None:
            return None
        return self._account_number_sent or self.account_number

    @field_validator("country")
    @classmethod
    def _country(cls, value: str | None) -> str | None:
        if value is None:
            return None
        code = value.strip().upper()
        if not is_country(code):
            raise ValueError("must be an ISO 3166-1 alpha-2 country code, such as GB or NG")
        return code

    @field_validator("account_number")
    @classmethod
    def _account_number(cls, value: str | None) -> str | None:
        if value is None:
            return None
        compact = _ACCOUNT_SEPARATORS.sub("", value).upper()
        if len(compact) > 34:
            raise ValueError("must be at most 34 characters")
        if not _ACCOUNT_CHARS.fullmatch(compact):
            raise ValueError("must contain only letters and digits (spaces and dashes are ignored)")
        return compact


class Status(StrEnum):
    ACTIVE = "active"
    MERGED = "merged"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class DataSource:
    """Where an answer's data comes from: a shipped file (its dataset and date) or an import
    (its source and the date its publisher gave it). `notice` is a licence notice that must
    travel with the data (GLEIF's BIC-to-LEI mapping)."""

    name: str
    as_of: dt.date
    notice: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "as_of": self.as_of.isoformat()}
        if self.notice:
            out["notice"] = self.notice
        return out


@dataclass(frozen=True, slots=True)
class Successor:
    """The institution a merged or closed one's business went to, as its publisher names it."""

    name: str | None
    code: str | None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("name", self.name), ("code", self.code)) if v}


@dataclass(frozen=True, slots=True)
class Institution:
    """A financial institution as one rail knows it."""

    name: str
    type: str
    code: str
    country: str
    bic: str | None = None
    city: str | None = None
    reachable_rails: tuple[str, ...] = ()
    # Codes other systems use for the same institution, e.g. ("paystack", "058"); never shown.
    external_codes: tuple[tuple[str, str], ...] = ()
    # The branch a code names, as its directory writes it (an IFSC names one branch).
    branch: str | None = None
    source: DataSource | None = None
    status: Status = Status.ACTIVE
    successor: Successor | None = None

    def external_code(self, system: str) -> str | None:
        for name, code in self.external_codes:
            if name == system:
                return code
        return None

    def to_dict(self) -> dict[str, Any]:
        address: dict[str, Any] = {}
        if self.city:
            address["city"] = self.city
        if self.country:  # unknown for a FedGlobal (foreign) participant of FedACH
            address["country"] = self.country
        out: dict[str, Any] = {"name": self.name, "type": self.type, "code": self.code}
        if self.bic:
            out["bic"] = self.bic
        if self.branch:
            out["branch"] = self.branch
        if address:
            out["address"] = address
        if self.source is not None:
            out["source"] = self.source.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class AccountInfo:
    number: str
    name_resolution: NameResolutionStatus
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.number}
        if self.name:
            out["name"] = self.name
        out["name_resolution"] = self.name_resolution.value
        return out


@dataclass(frozen=True, slots=True)
class Identification:
    """The outcome of one lookup; `detail` explains a result that is not `identified`."""

    result: ResultKind
    rail: Rail
    country: str | None = None
    institution: Institution | None = None
    reachable_rails: tuple[str, ...] = ()
    account: AccountInfo | None = None
    identified_at: dt.datetime | None = None
    detail: str | None = None
    # A merged or closed institution's answer (`not_found`): what it became, and from where.
    status: Status | None = None
    successor: Successor | None = None
    source: DataSource | None = None

    @property
    def billable(self) -> bool:
        return self.result is ResultKind.IDENTIFIED

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"result": self.result.value, "rail": self.rail.value}
        if self.country:
            out["country"] = self.country
        identified = self.result is ResultKind.IDENTIFIED
        if identified and self.institution is not None:
            out["institution"] = self.institution.to_dict()
        if self.reachable_rails:
            out["reachable_rails"] = list(self.reachable_rails)
        if self.account is not None:
            out["account"] = self.account.to_dict()
        if identified and self.identified_at is not None:
            out["identified_at"] = format_timestamp(self.identified_at)
        if self.status is not None:
            out["status"] = self.status.value
        if self.successor is not None:
            out["successor"] = self.successor.to_dict()
        if self.source is not None and not identified:  # an identified one's is its institution's
            out["source"] = self.source.to_dict()
        if self.detail:
            out["detail"] = self.detail
        return out


def format_timestamp(value: dt.datetime) -> str:
    """ISO-8601 in UTC with a `Z` suffix and millisecond precision."""
    if value.tzinfo is None:
        raise ValueError("identified_at must be timezone-aware")
    value = value.astimezone(dt.UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


# --- read model of the response (the `data` of POST /v1/identify); unknown fields are omitted ---


class InstitutionAddress(ReadModel):
    city: str | None = None
    # Unknown for a few directory rows (a FedACH FedGlobal participant abroad), then omitted.
    country: str | None = Field(None, description="ISO 3166-1 alpha-2, when known.")


class SourceOut(ReadModel):
    name: str = Field(description="The shipped dataset or the imported source (e.g. `gleif`, `fedach`).")
    as_of: str = Field(json_schema_extra={"format": "date"},
                       description="The date of the data: the shipped file's, or the publisher's for an import.")
    notice: str | None = Field(
        None, description="A licence notice that must accompany the data (GLEIF's BIC-to-LEI mapping).")


class SuccessorOut(ReadModel):
    name: str | None = None
    code: str | None = Field(None, description="Its code where the publisher gives one (an LEI, a bank code).")


class IdentifiedInstitution(ReadModel):
    name: str
    type: str = Field(examples=["bank"])
    code: str = Field(description="The institution's code on this rail.")
    bic: str | None = None
    branch: str | None = Field(
        None, description="The branch the code names, as its directory writes it (IFSC), when known."
    )
    address: InstitutionAddress | None = Field(None, description="Omitted when nothing is known.")
    source: SourceOut | None = Field(None, description="Where this record comes from, and how current it is.")


class AccountHolder(ReadModel):
    number: str = Field(description="The account or wallet number that was sent.")
    name: str | None = Field(None, description="The resolved holder name, when available.")
    name_resolution: NameResolutionStatus


class IdentifyResult(ReadModel):
    """Where an identifier leads. Fields that are unknown are omitted, never null."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "result": "identified",
                    "rail": "swift",
                    "country": "DE",
                    "institution": {
                        "name": "Deutsche Bank",
                        "type": "bank",
                        "code": "DEUTDEFF",
                        "bic": "DEUTDEFFXXX",
                        "address": {"city": "Frankfurt am Main", "country": "DE"},
                    },
                    "reachable_rails": ["swift", "sepa"],
                    "identified_at": "2026-01-01T12:00:00.000Z",
                }
            ]
        }
    )
    result: ResultKind = Field(description="Only `identified` is billed.")
    rail: Rail
    country: str | None = None
    institution: IdentifiedInstitution | None = Field(None, description="Omitted unless `identified`.")
    reachable_rails: list[str] | None = None
    account: AccountHolder | None = Field(None, description="Present when `account_number` was sent.")
    identified_at: str | None = Field(
        None, json_schema_extra={"format": "date-time"}, description="Present only when `identified`."
    )
    status: Status | None = Field(
        None, description="`active` when identified; `merged` or `closed` (then `not_found`, not billed) when "
        "the code's institution no longer exists as such.")
    successor: SuccessorOut | None = Field(
        None, description="Who took over a merged or closed institution, when known.")
    source: SourceOut | None = Field(None, description="For a merged or closed institution: where that comes from.")
    detail: str | None = Field(None, description="Why the result is not `identified`, when known.")
