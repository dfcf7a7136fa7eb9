"""The FedACH Participant RDFI directory (Federal Reserve E-Payments Routing Directory),
fixed-width text, one 155-character record per line:

  1-9 routing number | 10 office code (O main, B branch) | 11-19 servicing FRB number |
  20 record type (0 FRB, 1 use this routing number, 2 use the new routing number) |
  21-26 change date MMDDYY | 27-35 new routing number | 36-71 customer name |
  72-107 address | 108-127 city | 128-129 state | 130-134 zip | 135-138 zip extension |
  139-148 telephone | 149 institution status code | 150 data view code | 151-155 filler
"""

from __future__ import annotations

import datetime as dt
import re

from stdnum.us import rtn

from heddle.identify.importers.base import DirectoryRow, ImportFormatError, decode_lines, fit

RECORD_LENGTH = 155
_MIN_LENGTH = 150  # the 5-character filler is often trimmed
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_STATE = re.compile(r"[A-Z]{2}", re.ASCII)


def parse_fedach(data: bytes) -> list[DirectoryRow]:
    rows: list[DirectoryRow] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(decode_lines(data, "ascii"), start=1):
        if not line.strip():
            continue
        row = _parse_record(line, number)
        if row.code in seen:
            raise ImportFormatError(number, f"routing number {row.code} already appears on line "
                                            f"{seen[row.code]}")
        seen[row.code] = number
        rows.append(row)
    if not rows:
        raise ImportFormatError(0, "the file holds no FedACH records")
    return rows


def _parse_record(line: str, number: int) -> DirectoryRow:
    if not _MIN_LENGTH <= len(line) <= RECORD_LENGTH:
        raise ImportFormatError(number, f"a FedACH record is {RECORD_LENGTH} characters, this line "
                                        f"has {len(line)}")
    line = line.ljust(RECORD_LENGTH)

    def digits(start: int, end: int, what: str) -> str:
        value = line[start:end]
        if not _DIGITS.fullmatch(value):
            raise ImportFormatError(number, f"{what} (columns {start + 1}-{end}) must be digits, "
                                            f"got {value!r}")
        return value

    routing = digits(0, 9, "routing number")
    if not rtn.is_valid(routing):
        raise ImportFormatError(number, f"routing number {routing} fails the ABA check digit")
    office = line[9]
    if office not in "OB":
        raise ImportFormatError(number, f"office code must be O or B, got {office!r}")
    servicing = digits(10, 19, "servicing FRB number")
    record_type = line[19]
    if record_type not in "012":
        raise ImportFormatError(number, f"record type code must be 0, 1 or 2, got {record_type!r}")
    change = digits(20, 26, "change date")
    try:
        change_date = dt.datetime.strptime(change, "%m%d%y").date()
    except ValueError:
        raise ImportFormatError(number, f"change date {change} is not a MMDDYY date") from None
    new_routing = digits(26, 35, "new routing number")
    if record_type == "2" and (set(new_routing) == {"0"} or not rtn.is_valid(new_routing)):
        raise ImportFormatError(number, "record type 2 needs a valid new routing number")
    name = line[35:71].strip()
    city = line[107:127].strip()
    state = line[127:129]
    if not name:
        raise ImportFormatError(number, "customer name is empty")
    if not city:
        raise ImportFormatError(number, "city is empty")
    if not _STATE.fullmatch(state):
        raise ImportFormatError(number, f"state code must be 2 letters, got {state!r}")
    zip_code = digits(129, 134, "zip code")
    extra = {
        "office_code": office, "servicing_frb_number": servicing, "record_type": record_type,
        "change_date": change_date.isoformat(), "address": line[71:107].strip(),
        "state": state, "zip": zip_code,
    }
    if record_type == "2":
        extra["new_routing_number"] = new_routing
    return DirectoryRow(
        rail="routing_number", code=routing, name=fit(name, 300, "customer name", number),
        type="central_bank" if record_type == "0" else "financial_institution",
        country="US", source="fedach", city=fit(city, 120, "city", number),
        reachable_rails=["ach"], extra=extra,
    )
