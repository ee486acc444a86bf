"""`xgpu-advisor`: explain Pending GPU pods, plan, advise, replay (docs/design.md §4–§8)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from advisor.commands import diagnose, plan, replay, report, serve, snapshot, whatif
from advisor.errors import EXIT_INPUT, XgpuError
from advisor.flagparse import SuggestingParser
from advisor.terminal import one_line

COMMANDS = (diagnose, plan, report, snapshot, whatif, replay, serve)


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
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)  # exits 2 on a bad flag (one line), 0 after --help
    try:
        code: int = args.func(args)
    except XgpuError as err:  # the one place an error becomes an exit status
        print(f"xgpu-advisor: error: {one_line(err)}", file=sys.stderr)
        return err.exit_code
    return code


if __name__ == "__main__":
    sys.exit(main())
