"""Kubernetes quantity strings read as non-negative integers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.core.quantity import MAX_INT, decimal_int, quantity_int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8", 8),
        (" 16 ", 16),
        ("+3", 3),
        ("0", 0),
        ("-0", 0),
        ("1k", 1000),
        ("2Ki", 2048),
        ("1M", 10**6),
        ("1E", 10**18),
        ("1e3", 1000),
        ("1.5k", 1500),
        ("2000m", 2),
        ("0e999999999999", 0),
        (str(MAX_INT), MAX_INT),
        (7, 7),
        (4.0, 4),
    ],
)
def test_quantity_int(value: object, expected: int) -> None:
    assert quantity_int(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "'abc' is not an integer"),
        ("", "'' is not an integer"),
        ("1.5", "'1.5' is not an integer"),
        ("500m", "'500m' is not an integer"),
        ("1e-999999999", "'1e-999999999' is not an integer"),
        ("1KB", "'1KB' is not an integer"),
        ("-1", "'-1' is negative"),
        (-1, "-1 is negative"),
        (str(MAX_INT + 1), f"'{MAX_INT + 1}' is out of range"),
        ("8Ei", "'8Ei' is out of range"),
        ("1e400", "'1e400' is out of range"),
        (float("nan"), "nan is not an integer"),
        (None, "None is not an integer"),
        (False, "False is not an integer"),
        ([1], "[1] is not an integer"),
    ],
)
def test_quantity_int_errors(value: object, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        quantity_int(value)


@given(st.integers(0, MAX_INT))
def test_decimal_strings_read_back(n: int) -> None:
    assert quantity_int(str(n)) == n
    assert decimal_int(str(n)) == n


@given(st.text(max_size=80))
def test_any_text_reads_or_raises_value_error(text: str) -> None:
    try:
        n = quantity_int(text)
    except ValueError:
        return
    assert 0 <= n <= MAX_INT


def test_decimal_int_takes_no_suffix() -> None:
    with pytest.raises(ValueError, match="'1k' is not an integer"):
        decimal_int("1k")
