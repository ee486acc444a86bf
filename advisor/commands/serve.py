"""`xgpu-advisor serve --reports DIR`: the reports' home (`report --reports DIR`) over
HTTP, read-only (the app: `advisor.commands.serve_app`, imported only when serving, so that
other commands do not load aiohttp)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from advisor.commands.flags.values import count, positive_duration
from advisor.connections import add_limit_arguments, limits_of
from advisor.errors import InputError
from advisor.listen import parse_listen as listen_address

DEFAULT_LISTEN = ":19401"


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "serve", help="serve the reports' home (`report --reports DIR`) read-only over HTTP"
    )
    parser.add_argument(
        "--reports", type=Path, required=True, metavar="DIR", help="the reports' home"
    )
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="[HOST]:PORT",
        help=f"address to listen on (default {DEFAULT_LISTEN}: every interface)",
    )
    # The exporter's bounds (advisor.connections): a slow, idle or flooding client holds a
    # socket for a while, never for good, and never locks the others out.
    add_limit_arguments(parser, "", positive_duration, count(1))
    parser.set_defaults(func=run)


def parse_listen(listen: str) -> tuple[str | None, int]:
    try:
        return listen_address(listen)
    except ValueError as error:
        raise InputError(f"--listen {error}") from None


def run(args: argparse.Namespace) -> int:
    root: Path = args.reports
    if not root.is_dir():
        raise InputError(f"--reports {root}: not a directory")
    host, port = parse_listen(args.listen)
    limits = limits_of(args)
    from advisor.commands.serve_app import serve

    asyncio.run(serve(root, host, port, limits))  # until SIGTERM or SIGINT
    return 0
