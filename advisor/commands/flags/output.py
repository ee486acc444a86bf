"""`--format` and `--output`, for every command that prints a result (`commands.emit` writes
it)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_output(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    parser.add_argument("--format", choices=formats, default=formats[0])
    parser.add_argument("--output", type=Path, help="write here (atomically) instead of stdout")
