"""Curated data files (src/heddle/identify/data/*.json): validation and in-memory indexes.

Every file is validated against a strict schema when loaded, so a bad edit fails at start-up
(and in the test suite) instead of answering wrong lookups.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from pydantic import BaseModel

from heddle.identify.checkdigits import nuban_institution_code
from heddle.identify.data_schemas import (
    GhanaEntry,
    IfscBankEntry,
    IfscSubletFile,
    MomoEntry,
    NigerianEntry,
    NipEntry,
    RoutingEntry,
    SepaEntry,
    SortCodeEntry,
    SwiftEntry,
    _File,
)
from heddle.identify.ng_list import codes as ng_list_codes
from heddle.identify.ng_list import inactive_detail, read_cbn_list
from heddle.identify.ng_list import institution as ng_list_institution
from heddle.identify.schemas import DataSource, Institution, is_country


@dataclass(frozen=True, slots=True)
class SortCodeRange:
    start: str
    end: str
    institution: Institution | None  # None for a range shared by several banks
    shared_by: tuple[str, ...] = ()
    # True for a single sort code, or a range the source gives to one institution as a whole;
    # False for a clearing bank's allocation, which only says who clears the code.
    evidence: bool = False

    @property
    def size(self) -> int:
        return int(self.end) - int(self.start)


@dataclass(frozen=True, slots=True)
class NigerianInstitution:
    institution: Institution
    nuban_code: str | None  # 6-digit NUBAN institution code when check digits apply
    check_digit: bool


@dataclass(frozen=True, slots=True)
class MomoOperator:
    country: str
    institution: Institution
    owns_numbering: bool = True


def branch_shape(code: str) -> str:
    """'digits' when an IFSC's branch part (after the 0) is all digits, else 'letters'."""
    return "digits" if code[5:].isdigit() else "letters"


@dataclass(frozen=True, slots=True)
class IfscSublets:
    """Sub-member IFSCs: codes of a sponsor bank leased to another bank."""

    exact: dict[str, Institution]  # IFSC -> the bank that holds it
    prefixes: tuple[tuple[str, Institution], ...]  # longest first
    # Sponsor bank code -> shapes of its known sub-member codes: a code of that shape that
    # no map lists may be an unlisted sub-member, so it is not attributed to the sponsor.
    sponsor_shapes: dict[str, frozenset[str]]

    def holder(self, code: str) -> Institution | None:
        found = self.exact.get(code)
        if found is not None:
            return found
        for prefix, bank in self.prefixes:
            if code.startswith(prefix):
                return bank
        return None


@dataclass(frozen=True)
class CuratedData:
    """All curated indexes, built once per process."""

    as_of: dict[str, dt.date]
    bics: dict[str, Institution]  # BIC8 -> head office (curated files only)
    other_names: dict[str, tuple[str, ...]]  # BIC8 or IFSC bank code -> former and short names
    ifsc_merged: dict[str, tuple[str, dt.date | None]]  # IFSC bank code -> (successor, date)
    sepa: dict[str, SepaEntry]
    routing_numbers: dict[str, Institution]
    sort_code_ranges: tuple[SortCodeRange, ...]  # most specific first
    ifsc_banks: dict[str, Institution]  # 4-letter bank code (curated, then Razorpay's list)
    ifsc_sublets: IfscSublets
    ng_by_nuban_code: dict[str, NigerianInstitution]  # 6-digit NUBAN form of the CBN code
    ng_by_nip_code: dict[str, NigerianInstitution]  # NIBSS NIP code (the two can collide)
    ng_check_digit_institutions: tuple[NigerianInstitution, ...]
    ng_inactive: dict[str, str]  # 6-digit code of a merged or revoked institution -> detail
    # The same codes -> the institution as it was, with its status and successor.
    ng_inactive_institutions: dict[str, Institution]
    gh_banks: dict[str, Institution]  # by sort code
    gh_bank_prefixes: dict[str, Institution]  # 2-digit bank code -> head office
    momo_operators: dict[tuple[str, str], MomoOperator]  # (country, carrier name)
    momo_countries: frozenset[str] = field(default=frozenset())


def _read(name: str, entry_type: type[BaseModel]) -> _File:
    text = resources.files("heddle.identify").joinpath("data", name).read_text(encoding="utf-8")
    return _File[entry_type].model_validate(json.loads(text))  # type: ignore[valid-type]


def _intern(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


def _institution(*, name: str, type: str, code: str, country: str, source: DataSource,
                 bic: str | None = None, city: str | None = None,
                 rails: list[str] | tuple[str, ...] = (),
                 external: dict[str, str] | None = None) -> Institution:
    return Institution(
        name=sys.intern(name), type=sys.intern(type), code=code, country=sys.intern(country),
        bic=bic, city=_intern(city), reachable_rails=tuple(sys.intern(r) for r in rails),
        external_codes=tuple(sorted((external or {}).items())), source=source,
    )


def _unique(index: dict, key, value, dataset: str) -> None:
    if key in index:
        raise ValueError(f"{dataset}: code {key!r} appears twice")
    index[key] = value


def _ifsc_open_list(ifsc: dict[str, Institution], read: _Reader) -> IfscSublets:
    """Add Razorpay's bank list to `ifsc` (curated entries win) and index the sub-members."""
    text = resources.files("heddle.identify").joinpath("data", "ifsc_razorpay.json").read_text(
        encoding="utf-8")
    data = IfscSubletFile.model_validate(json.loads(text))
    read.record(data.dataset, data.as_of)
    for e in data.entries:
        ifsc.setdefault(e.prefix, _institution(source=read.last, name=e.name, type=e.type, code=e.prefix,
                                               country="IN", rails=e.reachable_rails))

    def bank(holder: str) -> Institution:
        if holder in ifsc:
            return ifsc[holder]
        # Razorpay names some leased prefixes' holders without a bank code.
        kind = ("cooperative_bank" if "co-operative" in holder.lower()
                or "sahakari" in holder.lower() else "bank")
        return _institution(source=read.last, name=holder, type=kind, code=holder[:40], country="IN")

    exact: dict[str, Institution] = {}
    shapes: dict[str, set[str]] = {}
    for code, holder in data.sublets.items():
        exact[code] = bank(holder)
        shapes.setdefault(code[:4], set()).add(branch_shape(code))
    prefixes = []
    for prefix, holder in data.sublet_prefixes.items():
        if len(prefix) == 11:
            exact.setdefault(prefix, bank(holder))
        else:
            prefixes.append((prefix, bank(holder)))
        if len(prefix) > 5:
            shapes.setdefault(prefix[:4], set()).add(branch_shape(prefix))
    prefixes.sort(key=lambda p: -len(p[0]))
    return IfscSublets(exact, tuple(prefixes),
                       {k: frozenset(v) for k, v in shapes.items()})


class _Reader:
    """Reads shipped files and records each dataset's `as_of`."""

    def __init__(self) -> None:
        self.as_of: dict[str, dt.date] = {}
        self.last: DataSource | None = None  # the file read last: its records' source

    def __call__(self, name: str, entry_type: type[BaseModel]) -> list:
        data = _read(name, entry_type)
        self.record(data.dataset, data.as_of)
        return data.entries

    def record(self, dataset: str, as_of: dt.date) -> DataSource:
        self.as_of[dataset] = as_of
        self.last = DataSource(sys.intern(dataset), as_of)
        return self.last


def _routing_numbers(read: _Reader) -> dict[str, Institution]:
    routing: dict[str, Institution] = {}
    for e in read("routing_numbers.json", RoutingEntry):
        _unique(routing, e.routing_number, _institution(
            source=read.last, name=e.name, type=e.type, code=e.routing_number, country="US", rails=e.reachable_rails),
            "routing_numbers")
    return routing


def _sort_code_ranges(read: _Reader) -> tuple[SortCodeRange, ...]:
    """Most specific first."""
    ranges = []
    for e in read("sort_codes.json", SortCodeEntry):
        inst = None if e.shared_by else _institution(
            source=read.last, name=e.name, type=e.type, code=e.from_, country="GB", bic=e.bic, rails=e.reachable_rails)
        ranges.append(SortCodeRange(e.from_, e.to, inst, tuple(e.shared_by or ()),
                                    evidence=inst is not None and (e.sole_owner or e.from_ == e.to)))
    ranges.sort(key=lambda r: (r.size, r.start))
    return tuple(ranges)


@dataclass(frozen=True)
class _Ifsc:
    banks: dict[str, Institution]
    sublets: IfscSublets
    other_names: dict[str, tuple[str, ...]]
    merged: dict[str, tuple[str, dt.date | None]]


def _ifsc(read: _Reader) -> _Ifsc:
    ifsc: dict[str, Institution] = {}
    other: dict[str, tuple[str, ...]] = {}
    merged: dict[str, tuple[str, dt.date | None]] = {}
    for e in read("ifsc_banks.json", IfscBankEntry):
        _unique(ifsc, e.prefix, _institution(
            source=read.last, name=e.name, type=e.type, code=e.prefix, country="IN", bic=e.bic,
            rails=e.reachable_rails),
            "ifsc_banks")
        if e.other_names:
            other[e.prefix] = tuple(e.other_names)
            if e.bic:
                other[e.bic[:8]] = tuple(e.other_names)
        if e.merged_into:
            merged[e.prefix] = (e.merged_into, e.merged_on)
    sublets = _ifsc_open_list(ifsc, read)
    return _Ifsc(ifsc, sublets, other, merged)


@dataclass(frozen=True)
class _Nigeria:
    by_nuban_code: dict[str, NigerianInstitution]
    by_nip_code: dict[str, NigerianInstitution]
    by_cbn_code: dict[str, NigerianInstitution]
    inactive: dict[str, str]
    inactive_institutions: dict[str, Institution]


def _nigeria(read: _Reader) -> _Nigeria:
    ng_nuban: dict[str, NigerianInstitution] = {}
    ng_nip: dict[str, NigerianInstitution] = {}
    by_cbn: dict[str, NigerianInstitution] = {}
    for e in read("ng_institutions.json", NigerianEntry):
        nuban_code = nuban_institution_code(e.cbn_code) if e.cbn_code else None
        external = {"paystack": e.paystack_code} if e.paystack_code else {}
        inst = _institution(source=read.last, name=e.name, type=e.type, code=e.cbn_code or e.nip_code, country="NG",
                            bic=e.bic, rails=e.reachable_rails, external=external)
        record = NigerianInstitution(inst, nuban_code if e.nuban_check_digit else None,
                                     e.nuban_check_digit)
        if nuban_code:
            _unique(ng_nuban, nuban_code, record, "ng_institutions")
            by_cbn[e.cbn_code] = record
        if e.nip_code:
            _unique(ng_nip, e.nip_code, record, "ng_institutions")
    # NIP codes from the shipped open lists; a curated entry keeps its own NIP code.
    for e in read("ng_nip_codes.json", NipEntry):
        if e.nip_code in ng_nip:
            continue
        if e.cbn_code is not None:
            if e.cbn_code not in by_cbn:
                raise ValueError(f"ng_nip_codes: CBN code {e.cbn_code} is not in ng_institutions")
            ng_nip[e.nip_code] = by_cbn[e.cbn_code]
            continue
        inst = _institution(source=read.last, name=e.name, type=e.type, code=e.nip_code, country="NG", rails=["nip"])
        ng_nip[e.nip_code] = NigerianInstitution(inst, None, False)
    # The CBN's list adds the verified codes the curated lists lack, and says which codes
    # belong to institutions that merged or lost their licence.
    cbn_list = read_cbn_list()
    cbn_source = read.record(cbn_list.dataset, cbn_list.as_of)
    ng_inactive: dict[str, str] = {}
    gone: dict[str, Institution] = {}
    for e in cbn_list.entries:
        for kind, code in ng_list_codes(e):
            index = ng_nuban if kind == "cbn" else ng_nip
            if code in index:
                continue
            if e.status != "active":
                ng_inactive.setdefault(code, inactive_detail(e))
                gone.setdefault(code, ng_list_institution(e, cbn_source))
            else:
                index[code] = NigerianInstitution(ng_list_institution(e, cbn_source), None, False)
    return _Nigeria(ng_nuban, ng_nip, by_cbn, ng_inactive, gone)


def _ghana(read: _Reader) -> tuple[dict[str, Institution], dict[str, Institution]]:
    """(by sort code, by 2-digit bank code)."""
    gh: dict[str, Institution] = {}
    gh_prefixes: dict[str, Institution] = {}
    for e in read("gh_banks.json", GhanaEntry):
        inst = _institution(source=read.last, name=e.name, type=e.type, code=e.sort_code, country="GH", bic=e.bic,
                            rails=e.reachable_rails, external={"paystack": e.sort_code})
        _unique(gh, e.sort_code, inst, "gh_banks")
        if e.bank_prefix:
            if not e.sort_code.startswith(e.bank_prefix):
                raise ValueError(f"gh_banks: {e.sort_code} is outside its bank prefix")
            _unique(gh_prefixes, e.bank_prefix, inst, "gh_banks")
    return gh, gh_prefixes


def _momo(read: _Reader) -> dict[tuple[str, str], MomoOperator]:
    momo: dict[tuple[str, str], MomoOperator] = {}
    for e in read("momo_operators.json", MomoEntry):
        if not is_country(e.country):
            raise ValueError(f"momo_operators: {e.country} is not a country")
        external = {name: e.country for name in e.name_resolvers}
        if e.paystack_code:
            external["paystack"] = e.paystack_code
        inst = _institution(source=read.last, name=e.name, type=e.type, code=e.code, country=e.country,
                            rails=e.reachable_rails, external=external)
        for carrier in e.carriers:
            _unique(momo, (e.country, carrier), MomoOperator(e.country, inst, e.owns_numbering),
                    "momo_operators")
    return momo


def _sepa(read: _Reader) -> dict[str, SepaEntry]:
    sepa: dict[str, SepaEntry] = {}
    for e in read("sepa.json", SepaEntry):
        _unique(sepa, e.country, e, "sepa")
    return sepa


def _bics(read: _Reader, other: dict[str, tuple[str, ...]], merged: dict,
          named_elsewhere: list[Institution]) -> dict[str, Institution]:
    """BIC8 -> head office: `swift_bics.json`, then the head-office BICs the other curated
    files name (the first one seen wins; a merged bank's BIC is not its successor's)."""
    bics: dict[str, Institution] = {}
    for e in read("swift_bics.json", SwiftEntry):
        _unique(bics, e.bic[:8], _institution(
            source=read.last, name=e.name, type=e.type, code=e.bic, country=e.bic[4:6], bic=e.bic, city=e.city),
            "swift_bics")
        if e.other_names:
            other[e.bic[:8]] = tuple(e.other_names)
    for inst in named_elsewhere:
        if inst.bic and inst.bic[:8] not in bics and inst.code not in merged:
            bics[inst.bic[:8]] = inst
    return bics


@cache
def load_curated() -> CuratedData:
    """Read and index every curated file (cached: the files ship with the package)."""
    read = _Reader()
    routing = _routing_numbers(read)
    ranges = _sort_code_ranges(read)
    ifsc = _ifsc(read)
    ng = _nigeria(read)
    gh, gh_prefixes = _ghana(read)
    momo = _momo(read)
    sepa = _sepa(read)
    other = dict(ifsc.other_names)
    bics = _bics(read, other, ifsc.merged, [
        *ifsc.banks.values(), *(r.institution for r in ng.by_cbn_code.values()), *gh.values(),
        *(r.institution for r in ranges if r.institution)])
    return CuratedData(
        as_of=read.as_of, bics=bics, other_names=other, ifsc_merged=ifsc.merged, sepa=sepa,
        routing_numbers=routing, sort_code_ranges=ranges, ifsc_banks=ifsc.banks,
        ifsc_sublets=ifsc.sublets, ng_by_nuban_code=ng.by_nuban_code, ng_by_nip_code=ng.by_nip_code,
        ng_check_digit_institutions=tuple(r for r in ng.by_cbn_code.values() if r.check_digit),
        ng_inactive=ng.inactive, ng_inactive_institutions=ng.inactive_institutions,
        gh_banks=gh, gh_bank_prefixes=gh_prefixes,
        momo_operators=momo, momo_countries=frozenset(c for c, _ in momo),
    )
