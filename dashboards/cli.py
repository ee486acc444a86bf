"""`xgpu-dashboards`: write the Grafana dashboards' JSON, or check it is current.

xgpu-dashboards build [--out DIR]   # default: dashboards/json/
xgpu-dashboards check [--out DIR]   # exit 1 and name the stale files
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dashboards.build import DEFAULT_OUT, stale, write


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="xgpu-dashboards", description="Grafana dashboards of xgpu-insight, as JSON."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("build", "write the dashboards' JSON files"),
        ("check", "exit 1 when the JSON files differ from a fresh build"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument(
            "--out",
            type=Path,
            default=DEFAULT_OUT,
            help=f"folder of the JSON files ({DEFAULT_OUT})",
        )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "build":
        for path in write(args.out):
            print(path)
        return 0
    problems = stale(args.out)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("run `xgpu-dashboards build` to regenerate", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
