"""The shipped IFSC list (`data/ifsc_branches.json.gz`), read memory-light at run time.

About 177,000 IFSCs: held as Python objects they would take some 60 MB, so each bank's branch
codes are one sorted bytes string of 6-character codes searched in place, and its details one
bytes string of lines (`branch TAB city TAB rails`) in the same order, with an array of line
offsets (about 7 MB in all). The file is built by heddle.identify.importers.ifsc_list.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
from array import array
from dataclasses import dataclass
from importlib import resources
from itertools import accumulate
from typing import Any

from heddle.identify.schemas import DataSource

FILE = "ifsc_branches.json.gz"
# Per-branch rails, written as one letter each in the details lines.
RAIL_LETTERS = {"neft": "N", "rtgs": "R", "imps": "I", "upi": "U"}
_LETTER_RAILS = {letter: rail for rail, letter in RAIL_LETTERS.items()}


@dataclass(frozen=True, slots=True)
class Branch:
    """What the shipped list knows of one IFSC. `rails` is None when the source gives no
    per-branch flags for it (then the bank's rails apply)."""

    name: str | None = None
    city: str | None = None
    rails: tuple[str, ...] | None = None


_UNDESCRIBED = Branch()


class BranchList:
    """Which IFSCs exist: per bank code, sorted 6-byte branch codes searched in place, and
    each code's details line found through an offsets array."""

    def __init__(self, data: dict[str, Any]):
        self.as_of = dt.date.fromisoformat(data["as_of"])
        self.source = DataSource(data.get("dataset", "ifsc_branches"), self.as_of)
        self.count: int = data["count"]
        self.details_count: int = data.get("details_count", 0)
        details_as_of = data.get("details_as_of")
        self.details_as_of = dt.date.fromisoformat(details_as_of) if details_as_of else None
        self._banks = {bank: codes.encode("ascii") for bank, codes in data["branches"].items()}
        self._details: dict[str, tuple[bytes, array]] = {}
        for bank, text in data.get("details", {}).items():
            blob = text.encode("utf-8")
            lines = blob.split(b"\n")
            if len(lines) != len(self._banks[bank]) // 6:
                raise ValueError(
                    f"ifsc_branches: {bank} has {len(lines)} details lines for {len(self._banks[bank]) // 6} codes"
                )
            # offsets[i] is where line i starts; offsets[i + 1] - 1 where it ends.
            self._details[bank] = (blob, array("I", accumulate((len(x) + 1 for x in lines), initial=0)))

    def covers(self, bank: str) -> bool:
        """True when RBI's list gives this bank code's branches (260 bank codes do)."""
        return bank in self._banks

    def _index(self, ifsc: str) -> int:
        """The code's position among its bank's sorted codes, or -1."""
        packed = self._banks.get(ifsc[:4])
        if packed is None:
            return -1
        key = ifsc[5:].encode("ascii")
        lo, hi = 0, len(packed) // 6
        while lo < hi:
            mid = (lo + hi) // 2
            probe = packed[mid * 6 : mid * 6 + 6]
            if probe == key:
                return mid
            if probe < key:
                lo = mid + 1
            else:
                hi = mid
        return -1

    def exists(self, ifsc: str) -> bool:
        return self._index(ifsc) >= 0

    def branch(self, ifsc: str) -> Branch | None:
        """The IFSC's branch, city and rails; None when the code is not in the list."""
        index = self._index(ifsc)
        if index < 0:
            return None
        found = self._details.get(ifsc[:4])
        if found is None:
            return _UNDESCRIBED
        blob, offsets = found
        line = blob[offsets[index] : offsets[index + 1] - 1]
        if not line:
            return _UNDESCRIBED
        name, city, letters = line.decode("utf-8").split("\t")
        rails = tuple(_LETTER_RAILS[x] for x in letters if x != "-") if letters else None
        return Branch(name or None, city or None, rails)

    def banks(self) -> dict[str, int]:
        return {bank: len(codes) // 6 for bank, codes in self._banks.items()}


def load_branch_list() -> BranchList:
    raw = resources.files("heddle.identify").joinpath("data", FILE).read_bytes()
    return BranchList(json.loads(gzip.decompress(raw)))
