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
