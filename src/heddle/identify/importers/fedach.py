"""The FedACH Participant RDFI directory (Federal Reserve E-Payments Routing Directory), in
both forms the Fed publishes.

Fixed-width text, one 155-character record per line:

  1-9 routing number | 10 office code (O main, B branch) | 11-19 servicing FRB number |
  20 record type (0 FRB, 1 use this routing number, 2 use the new routing number) |
  21-26 change date MMDDYY | 27-35 new routing number | 36-71 customer name |
  72-107 address | 108-127 city | 128-129 state | 130-134 zip | 135-138 zip extension |
  139-148 telephone | 149 institution status code | 150 data view code | 151-155 filler

FedGlobal rows (foreign institutions reached through the Fed's international ACH service)
have a blank state and a zip of 99999 or 00000; their country is not given, so none is set.

JSON (`{"fedACHParticipants": {"fedACHParticipants": [{"routingNumber": ..., ...}]}}`) carries
the same fields by name.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from typing import Any

from stdnum.us import rtn

from heddle.identify.importers.base import (
    BadRow,
    Deduplicator,
    DirectoryRow,
    ImportFormatError,
    ParsedRows,
    RowError,
    fit,
    text_lines,
)

RECORD_LENGTH = 155
_MIN_LENGTH = 150  # the 5-character filler is often trimmed
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_STATE = re.compile(r"[A-Z]{2}", re.ASCII)
_FIELDS = ("routingNumber", "officeCode", "servicingFRBNumber", "recordTypeCode", "changeDate",
           "newRoutingNumber", "customerName", "customerAddress", "customerCity",
           "customerState", "customerZip")


def parse_fedach(data: bytes) -> ParsedRows:
    """Fixed-width text; the JSON form is recognised by its first character."""
    if data.lstrip()[:1] == b"{":
        yield from parse_fedach_json(data)
        return
    dedupe = Deduplicator("routing number")
    for number, line in text_lines(data, "ascii"):
        if line is None:
            yield BadRow(number, "not ASCII text")
            continue
        if not line.strip():
            continue
        try:
            row = _record(_split_fixed(line))
            dedupe.check(row.code, number)
        except RowError as exc:
            yield BadRow(number, str(exc))
            continue
        yield row


def parse_fedach_json(data: bytes) -> ParsedRows:
    participants = _json_list(data, "fedACHParticipants")
    dedupe = Deduplicator("routing number")
    for number, item in enumerate(participants, start=1):
        try:
            if not isinstance(item, dict):
                raise RowError("a participant is not an object")
            fields = {}
            for name in _FIELDS:
                value = item.get(name, "")
                if not isinstance(value, str):
                    raise RowError(f"{name} is not a string")
                fields[name] = value
            row = _record(fields)
            dedupe.check(row.code, number)
        except RowError as exc:
            yield BadRow(number, f"participant {number}: {exc}")
            continue
        yield row


def _json_list(data: bytes, key: str) -> list[Any]:
    """The participant list of the Fed's JSON download (`{key: {key: [...]}}`)."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImportFormatError(0, f"not valid JSON: {exc}") from None
    inner = document.get(key) if isinstance(document, dict) else None
    items = inner.get(key) if isinstance(inner, dict) else None
    if not isinstance(items, list):
        raise ImportFormatError(0, f'expected {{"{key}": {{"{key}": [...]}}}}')
    return items


def _split_fixed(line: str) -> dict[str, str]:
    if not _MIN_LENGTH <= len(line) <= RECORD_LENGTH:
        raise RowError(f"a FedACH record is {RECORD_LENGTH} characters, this line has {len(line)}")
    return {
        "routingNumber": line[0:9], "officeCode": line[9], "servicingFRBNumber": line[10:19],
        "recordTypeCode": line[19], "changeDate": line[20:26], "newRoutingNumber": line[26:35],
        "customerName": line[35:71], "customerAddress": line[71:107],
        "customerCity": line[107:127], "customerState": line[127:129],
        "customerZip": line[129:134],
    }


def _digits(value: str, what: str) -> str:
    if not _DIGITS.fullmatch(value):
        raise RowError(f"{what} must be digits, got {value!r}")
    return value


def _record(f: dict[str, str]) -> DirectoryRow:
    routing = _digits(f["routingNumber"], "routing number")
    if not rtn.is_valid(routing):
        raise RowError(f"routing number {routing} fails the ABA check digit")
    office = f["officeCode"]
    if office not in ("O", "B"):
        raise RowError(f"office code must be O or B, got {office!r}")
    servicing = _digits(f["servicingFRBNumber"], "servicing FRB number")
    record_type = f["recordTypeCode"]
    if record_type not in ("0", "1", "2"):
        raise RowError(f"record type code must be 0, 1 or 2, got {record_type!r}")
    change = _digits(f["changeDate"], "change date")
    try:
        change_date = dt.datetime.strptime(change, "%m%d%y").date()
    except ValueError:
        raise RowError(f"change date {change} is not a MMDDYY date") from None
    new_routing = f["newRoutingNumber"].strip() or "000000000"
    if record_type == "2" and (set(new_routing) == {"0"} or not rtn.is_valid(new_routing)):
        raise RowError("record type 2 needs a valid new routing number")
    name = f["customerName"].strip()
    city = f["customerCity"].strip()
    state = f["customerState"].strip()
    if not name:
        raise RowError("customer name is empty")
    extra: dict[str, Any] = {
        "office_code": office, "servicing_frb_number": servicing, "record_type": record_type,
        "change_date": change_date.isoformat(), "address": f["customerAddress"].strip(),
    }
    country = "US"
    if state:
        if not _STATE.fullmatch(state):
            raise RowError(f"state code must be 2 letters, got {state!r}")
        extra["state"] = state
        extra["zip"] = _digits(f["customerZip"].strip(), "zip code")
    else:
        # FedGlobal: a foreign institution behind a US routing number; its country is in
        # free text only (city "CANADA", "MAIN GERMANY"), so none is claimed.
        extra["fedglobal"] = True
        country = ""
    if record_type == "2":
        extra["new_routing_number"] = new_routing
    return DirectoryRow(
        rail="routing_number", code=routing, name=fit(name, 300, "customer name"),
        type="central_bank" if record_type == "0" else "financial_institution",
        country=country, source="fedach", city=fit(city, 120, "city") if city else None,
        reachable_rails=["ach"], extra=extra,
    )


def iter_json_participants(data: bytes, key: str) -> Iterator[tuple[int, Any]]:
    """(1-based position, item) of a Fed JSON download's participant list."""
    yield from enumerate(_json_list(data, key), start=1)
