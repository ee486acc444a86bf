"""Typed command-line values: every number a flag takes is finite and in its range, so `nan`
never disables a cap or hangs a timeout, and a bad value is one line and exit 2 (argparse
reports an `ArgumentTypeError` as "argument --flag: ...", which `cli.OneLineParser` prints
on one line)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from advisor.durations import parse_duration


def positive_seconds(text: str) -> float:
    """A finite number of seconds above 0 (timeouts, budgets, staleness)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text!r}")
    return value


def count(minimum: int) -> Callable[[str], int]:
    """A whole number of at least `minimum`, below 2**31 (no count here needs more)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not minimum <= value < 2**31:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text!r}")
        return value

    parse.__name__ = f"count of at least {minimum}"
    return parse


def count_or_all(text: str) -> int:
    """A whole number of at least 0, or -1 for all."""
    if text.strip() == "-1":
        return -1
    try:
        return count(0)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be -1 (all) or at least 0, got {text!r}") from None


def positive_duration(text: str) -> float:
    """A Prometheus duration above 0 (a query step)."""
    try:
        value = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
    return value


_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def byte_size(text: str) -> int:
    """A size in bytes above 0, at most 64 GiB: `1048576`, `512KiB`, `64MiB`, `1GiB`."""
    digits = text.strip().rstrip("BbIiKkMmGg")
    unit = text.strip()[len(digits) :].lower()
    if not digits.isascii() or not digits.isdigit() or unit not in _UNITS or len(digits) > 12:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 64MiB)")
    value = int(digits) * _UNITS[unit]
    if not 0 < value <= 64 * 2**30:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 64GiB, got {text!r}")
    return value
