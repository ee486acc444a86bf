"""The `report` command's right-sizing flags: how much history it needs, and its floor."""

from __future__ import annotations

import argparse
import dataclasses
import math

from advisor.commands.flags.values import count
from advisor.defaults import RightsizingSettings
from advisor.durations import parse_duration


def duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def fraction(text: str) -> float:
    """A share: 0.1 or 10%; at least 0, finite."""
    number = text.strip().removesuffix("%")
    try:
        value = float(number) / (100 if text.strip().endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a share like 0.1 or 10%, got {text!r}"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite share of at least 0, got {text!r}")
    return value


def add_rightsizing_arguments(parser: argparse.ArgumentParser) -> None:
    """How much history right-sizing needs before it advises, and its floor."""
    defaults = RightsizingSettings()
    parser.add_argument(
        "--rightsizing.min-history",
        dest="rightsizing_min_history",
        type=duration,
        default=defaults.min_history_s,
        metavar="DURATION",
        help="advise a workload only when its history covers this long (default 24h)",
    )
    parser.add_argument(
        "--rightsizing.min-samples",
        dest="rightsizing_min_samples",
        type=count(1),
        default=defaults.min_samples,
        metavar="N",
        help=f"... and has this many sample times (default {defaults.min_samples})",
    )
    parser.add_argument(
        "--rightsizing.peak-margin",
        dest="rightsizing_peak_margin",
        type=fraction,
        default=defaults.peak_margin,
        metavar="SHARE",
        help="never recommend below the observed peak plus this share (default 10%%)",
    )


def rightsizing_settings(args: argparse.Namespace) -> RightsizingSettings:
    return dataclasses.replace(
        RightsizingSettings(),
        min_history_s=args.rightsizing_min_history,
        min_samples=args.rightsizing_min_samples,
        peak_margin=args.rightsizing_peak_margin,
    )
