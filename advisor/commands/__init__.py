"""`xgpu-advisor` subcommands: each module has `register(subparsers)` setting `func`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advisor.scenario import write_atomic


class InputError(Exception):
    """Bad input or unreachable source: exit code 2 with this message."""


def emit(text: str, output: Path | None) -> None:
    """Print, or write atomically to `output` (never a half-written report)."""
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    try:
        write_atomic(output, text)
    except OSError as err:
        raise InputError(f"{output}: cannot write: {err.strerror or err}") from None


def add_output(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    parser.add_argument("--format", choices=formats, default=formats[0])
    parser.add_argument("--output", type=Path, help="write here (atomically) instead of stdout")
