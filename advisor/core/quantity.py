"""Kubernetes quantity strings ("8", "16", "1k", "2Ki") read as non-negative integers.

Errors are ValueErrors whose message names the value; callers prefix the field.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

MAX_INT = 2**63 - 1  # Kubernetes keeps integer quantities in an int64
# The model's range, which the scenario format holds too (advisor.scenario.strict): counts,
# indexes and priorities as Kubernetes keeps them, in an int32; the memory of one card or one
# request at most 1 EiB in MiB, beyond any card, so a million of them still add up in int64.
MAX_COUNT = 2**31 - 1
MIN_COUNT = -(2**31)
MAX_MEMORY_MIB = 2**40
_MAX_TEXT = 64
_MAX_EXPONENT = 200  # beyond this a non-zero mantissa of <= 64 digits is out of range or < 1

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:[eE](?P<exponent>[+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?"
)
_SUFFIX: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_DECIMAL = re.compile(r"[+-]?[0-9]{1,19}")


def show(value: object) -> str:
    """A value as it appears in a problem message, cut short so garbage stays readable."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _checked(value: Fraction | int, original: object) -> int:
    if value < 0:
        raise ValueError(f"{show(original)} is negative")
    if isinstance(value, Fraction):
        if value.denominator != 1:
            raise ValueError(f"{show(original)} is not an integer")
        value = value.numerator
    if value > MAX_INT:
        raise ValueError(f"{show(original)} is out of range")
    return value


def _parse_text(text: str, original: object) -> Fraction:
    match = _QUANTITY.fullmatch(text.strip()) if len(text) <= _MAX_TEXT else None
    if match is None:
        raise ValueError(f"{show(original)} is not an integer")
    number = Fraction(match["number"])
    if match["sign"] == "-":
        number = -number
    exponent = int(match["exponent"] or 0)
    if number == 0:
        return number
    if exponent > _MAX_EXPONENT:
        raise ValueError(f"{show(original)} is out of range")
    if exponent < -_MAX_EXPONENT:
        raise ValueError(f"{show(original)} is not an integer")
    return number * Fraction(10) ** exponent * _SUFFIX[match["suffix"] or ""]


def quantity_int(value: object) -> int:
    """A resource quantity as a non-negative integer, or ValueError saying why not."""
    if isinstance(value, bool):
        raise ValueError(f"{show(value)} is not an integer")
    if isinstance(value, int):
        return _checked(value, value)
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise ValueError(f"{show(value)} is not an integer")
        return _checked(int(value), value)
    if isinstance(value, str):
        return _checked(_parse_text(value, value), value)
    raise ValueError(f"{show(value)} is not an integer")


def decimal_int(value: object) -> int:
    """A plain decimal integer (label and annotation values), non-negative, or ValueError."""
    if not isinstance(value, str) or _DECIMAL.fullmatch(value.strip()) is None:
        raise ValueError(f"{show(value)} is not an integer")
    return _checked(int(value.strip()), value)


def _fraction(value: object) -> Fraction:
    if isinstance(value, bool):
        raise ValueError(f"{show(value)} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{show(value)} is not a quantity")
        return Fraction(value)
    if isinstance(value, str):
        try:
            return _parse_text(value, value)
        except ValueError:
            raise ValueError(f"{show(value)} is not a quantity") from None
    raise ValueError(f"{show(value)} is not a quantity")


def quantity_milli(value: object) -> int:
    """A quantity in thousandths ("500m" -> 500, "2" -> 2000), rounded up as Kubernetes'
    Quantity.MilliValue does: how kube-scheduler counts cpu."""
    return _checked(math.ceil(_fraction(value) * 1000), value)


def quantity_number(value: object) -> float:
    """A quantity as a non-negative number ("500m" -> 0.5, "60" -> 60.0): an HPA's
    averageValue, which the advisor compares with a series' value, not with a count."""
    fraction = _fraction(value)
    if fraction < 0:
        raise ValueError(f"{show(value)} is negative")
    return float(fraction)


def quantity_units(value: object) -> int:
    """A quantity in whole units ("1Gi" -> 1073741824), rounded up as Quantity.Value does:
    how kube-scheduler counts memory (bytes) and pod slots."""
    return _checked(math.ceil(_fraction(value)), value)
