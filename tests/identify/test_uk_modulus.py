"""UK modulus checking: every worked example of VocaLink's "Validating account numbers"
specification (the 34 test cases it publishes), and the check on the sort-code rail."""

from __future__ import annotations

import pytest

from heddle.identify.uk_modulus import Holder, Outcome, check, load_table, normalise

VALID, INVALID = Outcome.VALID, Outcome.INVALID

SPEC_CASES = [
    ("089999", "66374958", VALID),    # 1 pass modulus 10
    ("107999", "88837491", VALID),    # 2 pass modulus 11
    ("202959", "63748472", VALID),    # 3 pass modulus 11 and double alternate
    ("871427", "46238510", VALID),    # 4 exceptions 10 & 11, first passes
    ("872427", "46238510", VALID),    # 5 exceptions 10 & 11, second passes
    ("871427", "09123496", VALID),    # 6 exception 10, ab = 09 and g = 9
    ("871427", "99123496", VALID),    # 7 exception 10, ab = 99 and g = 9
    ("820000", "73688637", VALID),    # 8 exception 3, first sort code of the range
    ("827999", "73988638", VALID),    # 9 exception 3, last sort code of the range
    ("827101", "28748352", VALID),    # 10 exception 3
    ("134020", "63849203", VALID),    # 11 exception 4, remainder equals the check digits
    ("118765", "64371389", VALID),    # 12 exception 1 passes
    ("200915", "41011166", VALID),    # 13 exception 6, foreign currency account
    ("938611", "07806039", VALID),    # 14 exception 5 passes
    ("938600", "42368003", VALID),    # 15 exception 5 passes with substitution
    ("938063", "55065200", VALID),    # 16 exception 5, both remainders 0
    ("772798", "99345694", VALID),    # 17 exception 7
    ("086090", "06774744", VALID),    # 18 exception 8
    ("309070", "02355688", VALID),    # 19 exceptions 2 & 9, first passes
    ("309070", "12345668", VALID),    # 20 exceptions 2 & 9, second passes with 309634
    ("309070", "12345677", VALID),    # 21 exception 2, a != 0 and g != 9
    ("309070", "99345694", VALID),    # 22 exception 2, a != 0 and g = 9
    ("938063", "15764273", INVALID),  # 23 exception 5, second check digit wrong
    ("938063", "15764264", INVALID),  # 24 exception 5, first check digit wrong
    ("938063", "15763217", INVALID),  # 25 exception 5, remainder 1
    ("118765", "64371388", INVALID),  # 26 exception 1 fails
    ("203099", "66831036", INVALID),  # 27 passes modulus 11, fails double alternate
    ("203099", "58716970", INVALID),  # 28 fails modulus 11, passes double alternate
    ("089999", "66374959", INVALID),  # 29 fails modulus 10
    ("107999", "88837493", INVALID),  # 30 fails modulus 11
    ("074456", "12345112", VALID),    # 31 exceptions 12 & 13, modulus 11 passes
    ("070116", "34012583", VALID),    # 32 exceptions 12 & 13, both pass
    ("074456", "11104102", VALID),    # 33 exceptions 12 & 13, only modulus 10 passes
    ("180002", "00000190", VALID),    # 34 exception 14, passes after the shift
]


@pytest.mark.parametrize("sort_code, account, expected", SPEC_CASES)
def test_specification_examples(sort_code, account, expected):
    assert check(sort_code, account) is expected


def test_table_loads_and_forms_outside_the_check():
    table = load_table()
    assert len(table.rules) > 1000 and table.substitutions["938173"] == "938017"
    assert check("999999", "12345678") is Outcome.NOT_CHECKED  # no rule for the sort code
    assert check("089999", "0066374958") is Outcome.NOT_CHECKED  # 10 digits: bank-specific
    assert check("089999", "6374958") in (VALID, INVALID)  # 7 digits: zero-padded


async def test_sort_code_rail_refuses_an_account_failing_the_check(lookup, rejects):
    error = await rejects("invalid_identifier", identifier="08-99-99", rail="sort_code",
                          account_number="66374959")
    assert error.details["field"] == "account_number" and "modulus" in error.message
    data = await lookup(identifier="10-79-99", rail="sort_code", account_number="88837491")
    assert data["account"]["number"] == "88837491"


# Non-standard lengths (VocaLink, "Standardising account numbers"). The specification gives no
# worked example of them, so each form is built from a published 8-digit example: the IBAN
# registry's UK example GB29 NWBK 6016 1331 9268 19 (NatWest, 60-16-13 31926819) and the
# specification's example 1 (08-99-99 66374958, a Co-operative Bank code).
NATWEST = Holder("NATIONAL WESTMINSTER BANK PLC", exact=True)
COOP = Holder("The Co-operative Bank p.l.c.", exact=True)
SANTANDER = Holder("Santander UK plc", exact=True)


def test_published_examples_hold_in_their_standard_form():
    assert check("601613", "31926819") is VALID
    assert check("601613", "31926818") is INVALID


@pytest.mark.parametrize("sort_code, account, holder, standard", [
    ("601613", "926819", None, ("601613", "00926819")),        # six digits: two zeros
    ("601613", "1926819", None, ("601613", "01926819")),       # seven digits: one zero
    ("601613", "1231926819", NATWEST, ("601613", "31926819")),  # NatWest: the last eight
    ("089999", "6637495801", COOP, ("089999", "66374958")),     # Co-op: the first eight
    ("089990", "966374958", SANTANDER, ("089999", "66374958")),  # Santander: a moves to z
    ("601613", "1231926819", None, None),                       # ten digits, holder unknown
    ("601613", "1231926819", Holder("Chase", exact=True), None),  # another bank's form
    ("089990", "966374958", None, None),                        # nine digits: Santander only
    ("089990", "966374958", Holder("Coventry Building Society", exact=True), None),
])
def test_non_standard_lengths_are_standardised_as_published(sort_code, account, holder, standard):
    assert normalise(sort_code, account, holder) == standard


def test_ten_and_nine_digit_numbers_are_checked_at_their_banks():
    assert check("601613", "1231926819", holder=NATWEST) is VALID
    assert check("601613", "1231926818", holder=NATWEST) is INVALID
    assert check("089999", "6637495801", holder=COOP) is VALID
    assert check("089999", "6637495901", holder=COOP) is INVALID
    assert check("089990", "966374958", holder=SANTANDER) is VALID
    assert check("089990", "966374959", holder=SANTANDER) is INVALID


def test_a_clearing_range_alone_never_fails_a_bank_specific_form():
    """A code known only as inside NatWest's range may be an agency bank's: its ten-digit
    number passes when it fits NatWest's form, and is otherwise not checked, never refused."""
    in_range = Holder("National Westminster Bank plc", exact=False)
    assert check("601613", "1231926819", holder=in_range) is VALID
    assert check("601613", "1231926818", holder=in_range) is Outcome.NOT_CHECKED
    # The general rules (6 to 8 digits) do not depend on the holder.
    assert check("601613", "31926818", holder=in_range) is INVALID
