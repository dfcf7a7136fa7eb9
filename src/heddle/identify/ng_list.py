"""The CBN's list of licensed institutions (naija-data, CC BY 4.0): codes beyond the curated
NIP and CBN lists, and the institutions that merged or lost their licence."""

from __future__ import annotations

import datetime as dt
import json
import sys
from importlib import resources
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from heddle.identify.checkdigits import nuban_institution_code
from heddle.identify.schemas import DataSource, Institution, Status, Successor


class CbnListEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, StringConstraints(min_length=2, max_length=200)]
    type: Annotated[str, StringConstraints(pattern=r"^[a-z_]{3,40}$")]
    status: Literal["active", "merged", "licence_revoked"]
    cbn_code: Annotated[str, StringConstraints(pattern=r"^(?:[0-9]{3}|[0-9]{5})$")] | None = None
    nip_code: Annotated[str, StringConstraints(pattern=r"^[0-9]{6}$")] | None = None
    status_date: dt.date | None = None
    merged_into: str | None = None


class CbnListFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    as_of: dt.date
    licence: str
    sources: list[str] = Field(min_length=1)
    notes: str
    entries: list[CbnListEntry] = Field(min_length=1)


def read_cbn_list() -> CbnListFile:
    text = resources.files("heddle.identify").joinpath("data", "ng_cbn_list.json").read_text(
        encoding="utf-8")
    return CbnListFile.model_validate(json.loads(text))


def institution(entry: CbnListEntry, source: DataSource | None = None) -> Institution:
    """The entry's institution; a merged one is `merged` (its successor named), a revoked one
    `closed`."""
    status = {"active": Status.ACTIVE, "merged": Status.MERGED}.get(entry.status, Status.CLOSED)
    return Institution(name=sys.intern(entry.name), type=sys.intern(entry.type),
                       code=entry.cbn_code or entry.nip_code or "", country="NG",
                       reachable_rails=("nip",) if status is Status.ACTIVE else (), source=source,
                       status=status,
                       successor=Successor(entry.merged_into, None) if entry.merged_into else None)


def codes(entry: CbnListEntry) -> list[tuple[str, str]]:
    """(kind, 6-digit code) pairs: ("cbn", NUBAN form of the CBN code), ("nip", NIP code)."""
    out = []
    if entry.cbn_code:
        out.append(("cbn", nuban_institution_code(entry.cbn_code)))
    if entry.nip_code:
        out.append(("nip", entry.nip_code))
    return out


def inactive_detail(entry: CbnListEntry) -> str:
    since = f" on {entry.status_date.isoformat()}" if entry.status_date else ""
    if entry.status == "merged":
        return (f"{entry.name} merged into {entry.merged_into}{since}; its codes are no longer "
                f"an institution of their own. Use {entry.merged_into}'s code.")
    return f"The CBN revoked the licence of {entry.name}{since}; it takes no payments."
