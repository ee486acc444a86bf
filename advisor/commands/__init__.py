"""`xgpu-advisor` subcommands: each module has `run(args)`, which `cli` imports only once
the flags are parsed; every command's flags are `commands.flags.commands` (light, so that
`--help` and a bad flag start fast), and where a command's cluster comes from is
`cluster_input` (with `pods_from`)."""

from __future__ import annotations

import sys
from pathlib import Path

from advisor.errors import InputError
from advisor.terminal import terminal_text


def emit(text: str, output: Path | None) -> None:
    """Print, or write atomically to `output` (never a half-written report). Printed, a
    control character from remote text is escaped (JSON has none: it escapes them itself)."""
    if output is None:
        text = terminal_text(text)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    from advisor.scenario import write_atomic  # not at import: the flags stay light

    try:
        write_atomic(output, text)
    except OSError as err:
        raise InputError(f"{output}: cannot write: {err.strerror or err}") from None
