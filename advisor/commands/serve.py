"""`xgpu-advisor serve --reports DIR`: the reports' home (`report --reports DIR`) over
HTTP, read-only (the app: `advisor.commands.serve_app`, imported only when serving, so that
other commands do not load aiohttp)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from advisor.connections import limits_of
from advisor.errors import InputError
from advisor.listen import parse_listen as listen_address


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
