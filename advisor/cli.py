"""`xgpu-advisor`: explain Pending GPU pods, plan, advise, replay (docs/design.md §4–§8)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from advisor.commands.flags.commands import COMMANDS
from advisor.errors import EXIT_INPUT, XgpuError
from advisor.flagparse import SuggestingParser
from advisor.terminal import one_line


class OneLineParser(SuggestingParser):
    """argparse, but a bad flag is one line on stderr (no usage block) and exit 2, as every
    other bad input is; a mistyped flag or command with the nearest real one."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"{self.prog}: error: {one_line(message)}\n")


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="xgpu-advisor",
        description="Explain Pending vGPU pods and advise on shared-GPU clusters.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS.values():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)  # exits 2 on a bad flag (one line), 0 after --help
    # The command's code (the model, the sources, their libraries) only now: the flags
    # alone stay light (advisor.commands.flags.commands).
    command = importlib.import_module(f"advisor.commands.{args.command}")
    try:
        code: int = command.run(args)
    except XgpuError as err:  # the one place an error becomes an exit status
        print(f"xgpu-advisor: error: {one_line(err)}", file=sys.stderr)
        return err.exit_code
    return code


if __name__ == "__main__":
    sys.exit(main())
