"""The Fedwire Funds Service participant directory (Federal Reserve E-Payments Routing
Directory), fixed-width or JSON, so `wire` reachability comes from the Fed's own data.

Fixed-width, 101 characters per line:

  1-9 routing number | 10-27 telegraphic name | 28-63 customer name | 64-65 state |
  66-90 city | 91 funds transfer status (Y eligible, N not) | 92 funds settlement-only
  status (S settlement only) | 93 book-entry securities transfer status (Y/N) |
  94-101 date of last revision YYYYMMDD (may be blank)

JSON: `{"fedwireParticipants": {"fedwireParticipants": [{"routingNumber", "telegraphicName",
"customerName", "customerState", "customerCity", "fundsEligibility",
"fundsSettlementOnlyStatus", "securitiesEligibility", "changeDate"}]}}`.

A participant is reachable on `wire` when it is eligible for funds transfers and not
settlement-only (a settlement-only participant cannot receive third-party transfers).
"""

from __future__ import annotations

import re
from typing import Any

from stdnum.us import rtn

from heddle.identify.importers.base import (
    BadRow,
    Deduplicator,
    DirectoryRow,
    ParsedRows,
    RowError,
    fit,
    text_lines,
)
from heddle.identify.importers.fedach import iter_json_participants

_MIN_LENGTH, RECORD_LENGTH = 93, 101  # the revision date may be blank and trimmed
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_STATE = re.compile(r"[A-Z]{2}", re.ASCII)
_FIELDS = ("routingNumber", "telegraphicName", "customerName", "customerState", "customerCity",
           "fundsEligibility", "fundsSettlementOnlyStatus", "securitiesEligibility", "changeDate")


def parse_fedwire(data: bytes) -> ParsedRows:
    if data.lstrip()[:1] == b"{":
        yield from _parse_json(data)
        return
    dedupe = Deduplicator("routing number")
    for number, line in text_lines(data, "ascii"):
        if line is None:
            yield BadRow(number, "not ASCII text")
            continue
        if not line.strip():
            continue
        try:
            if not _MIN_LENGTH <= len(line) <= RECORD_LENGTH:
                raise RowError(f"a Fedwire record is {RECORD_LENGTH} characters, this line has "
                               f"{len(line)}")
            line = line.ljust(RECORD_LENGTH)
            row = _record({
                "routingNumber": line[0:9], "telegraphicName": line[9:27],
                "customerName": line[27:63], "customerState": line[63:65],
                "customerCity": line[65:90], "fundsEligibility": line[90],
                "fundsSettlementOnlyStatus": line[91], "securitiesEligibility": line[92],
                "changeDate": line[93:101],
            })
            dedupe.check(row.code, number)
        except RowError as exc:
            yield BadRow(number, str(exc))
            continue
        yield row


def _parse_json(data: bytes) -> ParsedRows:
    dedupe = Deduplicator("routing number")
    for number, item in iter_json_participants(data, "fedwireParticipants"):
        try:
            if not isinstance(item, dict):
                raise RowError("a participant is not an object")
            fields = {name: item.get(name, "") for name in _FIELDS}
            if not all(isinstance(v, str) for v in fields.values()):
                raise RowError("every field must be a string")
            row = _record(fields)
            dedupe.check(row.code, number)
        except RowError as exc:
            yield BadRow(number, f"participant {number}: {exc}")
            continue
        yield row


def _record(f: dict[str, Any]) -> DirectoryRow:
    routing = f["routingNumber"]
    if not _DIGITS.fullmatch(routing) or len(routing) != 9:
        raise RowError(f"routing number must be 9 digits, got {routing!r}")
    if not rtn.is_valid(routing):
        raise RowError(f"routing number {routing} fails the ABA check digit")
    name = f["customerName"].strip()
    if not name:
        raise RowError("customer name is empty")
    state = f["customerState"].strip()
    if state and not _STATE.fullmatch(state):
        raise RowError(f"state code must be 2 letters, got {state!r}")
    funds = f["fundsEligibility"].strip()
    settlement_only = f["fundsSettlementOnlyStatus"].strip()
    securities = f["securitiesEligibility"].strip()
    if funds not in ("Y", "N") or settlement_only not in ("", "S") or securities not in ("Y", "N", ""):
        raise RowError("funds transfer status must be Y or N, settlement-only S or blank, "
                       "securities Y or N")
    revised = f["changeDate"].strip()
    if revised and not (_DIGITS.fullmatch(revised) and len(revised) == 8):
        raise RowError(f"revision date must be YYYYMMDD, got {revised!r}")
    city = f["customerCity"].strip()
    wire = funds == "Y" and settlement_only != "S"
    extra: dict[str, Any] = {"telegraphic_name": f["telegraphicName"].strip(),
                             "funds_transfer": funds == "Y", "settlement_only": settlement_only == "S",
                             "securities_transfer": securities == "Y"}
    if state:
        extra["state"] = state
    if revised:
        extra["revised"] = revised
    return DirectoryRow(
        rail="routing_number", code=routing, name=fit(name, 300, "customer name"),
        type="financial_institution", country="US", source="fedwire",
        city=fit(city, 120, "city") if city else None,
        reachable_rails=["wire"] if wire else [], extra=extra,
    )
