"""Check-digit algorithms that no maintained library implements.

ABA routing numbers use python-stdnum (`stdnum.us.rtn`); IBAN and BIC use schwifty.
"""

from __future__ import annotations

import re
from functools import cache

_DIGITS = re.compile(r"[0-9]+", re.ASCII)

# CBN Revised Standards on NUBAN (2020): the 16-digit form ABCDEF-GHIJKLMNO-P, where ABCDEF is
# the institution code, GHIJKLMNO the account serial number and P the check digit.
NUBAN_WEIGHTS = (3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3)


def is_digits(value: str, length: int | None = None) -> bool:
    """ASCII digits only (`str.isdigit` also accepts other scripts' digits)."""
    return bool(_DIGITS.fullmatch(value)) and (length is None or len(value) == length)


def nuban_institution_code(code: str) -> str:
    """The 6-digit NUBAN institution code: a deposit money bank's 3-digit CBN code gets three
    leading zeros ('011' -> '000011'); another financial institution's 5-digit CBN code gets a
    leading '9' ('50547' -> '950547')."""
    if not is_digits(code):
        raise ValueError("institution code must be digits")
    if len(code) == 3:
        return "000" + code
    if len(code) == 5:
        return "9" + code
    if len(code) == 6 and code.startswith(("000", "9")):
        return code
    raise ValueError("a NUBAN institution code has 3 (bank) or 5 (other institution) digits")


def nuban_check_digit(institution_code: str, serial: str) -> int:
    """Check digit of a 9-digit account serial number at a 6-digit NUBAN institution code.

    Weighted sum with 3,7,3,3,7,3,3,7,3,3,7,3,3,7,3; the check digit is 10 minus the sum modulo
    10, and 0 when that gives 10.
    """
    if not is_digits(institution_code, 6) or not is_digits(serial, 9):
        raise ValueError("need a 6-digit institution code and a 9-digit serial number")
    total = sum(int(d) * w for d, w in zip(institution_code + serial, NUBAN_WEIGHTS, strict=True))
    return (10 - total % 10) % 10


@cache
def nuban_partial_sums(institution_code: str) -> int:
    """The institution code's share of the weighted sum, to test many banks quickly."""
    return sum(int(d) * w for d, w in zip(institution_code, NUBAN_WEIGHTS[:6], strict=True))


def nuban_serial_sum(serial: str) -> int:
    return sum(int(d) * w for d, w in zip(serial, NUBAN_WEIGHTS[6:], strict=True))


def is_valid_nuban(institution_code: str, account_number: str) -> bool:
    """True when the 10-digit account number's last digit is its check digit at that institution."""
    if not is_digits(account_number, 10):
        return False
    return nuban_check_digit(institution_code, account_number[:9]) == int(account_number[9])
