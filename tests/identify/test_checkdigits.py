"""Check-digit algorithms, against independent implementations written from the standards."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from stdnum.us import rtn

from heddle.identify.checkdigits import (
    is_digits,
    is_valid_nuban,
    nuban_check_digit,
    nuban_institution_code,
)

digits = st.text(alphabet="0123456789", min_size=1, max_size=1)


def cbn_2010_check_digit(bank_code: str, serial: str) -> int:
    """CBN NUBAN proposals v0.4 (2010), step by step: A*3+B*7+C*3+D*3+E*7+F*3+G*3+H*7+I*3+
    J*3+K*7+L*3 over the 3-digit bank code and 9-digit serial; modulo 10; subtract from 10;
    10 becomes 0."""
    a, b, c, d, e, f, g, h, i, j, k, l = (int(x) for x in bank_code + serial)
    total = a*3 + b*7 + c*3 + d*3 + e*7 + f*3 + g*3 + h*7 + i*3 + j*3 + k*7 + l*3
    result = 10 - total % 10
    return 0 if result == 10 else result


def cbn_2020_check_digit(institution6: str, serial: str) -> int:
    """CBN revised standard (2020): 15 digits ABCDEF-GHIJKLMNO weighted 3,7,3 repeating."""
    weights = [3, 7, 3] * 5
    total = sum(int(x) * w for x, w in zip(institution6 + serial, weights))
    return (10 - total % 10) % 10


def test_cbn_worked_examples():
    # First Bank (011), serials from the CBN document: 000001457 -> 9, 000000022 -> 0.
    assert nuban_check_digit("000011", "000001457") == 9
    assert nuban_check_digit("000011", "000000022") == 0
    assert is_valid_nuban("000011", "0000014579")
    assert is_valid_nuban("000011", "0000000220")


def test_institution_code_padding_follows_the_revised_standard():
    assert nuban_institution_code("011") == "000011"
    assert nuban_institution_code("232") == "000232"
    assert nuban_institution_code("50547") == "950547"  # the standard's own OFI example
    for bad in ("11", "0111", "123456", "abc", "٠١١"):
        with pytest.raises(ValueError):
            nuban_institution_code(bad)


@given(st.text("0123456789", min_size=3, max_size=3), st.text("0123456789", min_size=9, max_size=9))
def test_three_digit_banks_match_the_2010_algorithm(bank, serial):
    assert nuban_check_digit("000" + bank, serial) == cbn_2010_check_digit(bank, serial)


@given(st.text("0123456789", min_size=5, max_size=5), st.text("0123456789", min_size=9, max_size=9))
def test_other_institutions_match_the_2020_algorithm(code, serial):
    assert nuban_check_digit("9" + code, serial) == cbn_2020_check_digit("9" + code, serial)


@given(st.text("0123456789", min_size=6, max_size=6), st.text("0123456789", min_size=9, max_size=9),
       st.integers(0, 9), st.integers(1, 9))
def test_nuban_detects_every_single_digit_change(institution, serial, position, delta):
    account = serial + str(nuban_check_digit(institution, serial))
    changed = account[:position] + str((int(account[position]) + delta) % 10) + account[position + 1:]
    assert is_valid_nuban(institution, account)
    assert not is_valid_nuban(institution, changed)


@given(st.text("0123456789", min_size=8, max_size=8), st.integers(0, 8), st.integers(1, 9))
def test_aba_detects_every_single_digit_change(body, position, delta):
    number = body + rtn.calc_check_digit(body)
    changed = number[:position] + str((int(number[position]) + delta) % 10) + number[position + 1:]
    assert rtn.is_valid(number)
    assert not rtn.is_valid(changed)


def test_is_digits_is_ascii_only():
    assert is_digits("0123", 4)
    assert not is_digits("٠١٢٣")  # Arabic-Indic digits pass str.isdigit()
    assert not is_digits("１２３")  # full-width digits
    assert not is_digits("")
    assert not is_digits("12 3")
    assert not is_digits("123", 4)


def test_is_valid_nuban_rejects_malformed_accounts():
    assert not is_valid_nuban("000011", "000001457")  # 9 digits
    assert not is_valid_nuban("000011", "00000145790")
    assert not is_valid_nuban("000011", "000001457X")
    with pytest.raises(ValueError):
        nuban_check_digit("11", "000001457")
