"""`--scheduler`, for every command that reads a cluster: one profile, `auto`, or (whatif)
several to compare."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from advisor.defaults import BUILT_IN_PROFILES
from advisor.errors import InputError

if TYPE_CHECKING:
    from advisor.core.model import ProfileName

AUTO = "auto"


def add_scheduler_argument(parser: argparse.ArgumentParser, *, several: bool = False) -> None:
    """`--scheduler`, the one definition every command that reads a cluster uses
    (docs/design.md §9.2). Checked by `scheduler_choice(s)`, not by argparse, so that a bad
    name is one line and exit 2 like every other bad input."""
    names = ", ".join(BUILT_IN_PROFILES)
    compare = "; several, comma-separated, compare the profiles side by side" if several else ""
    parser.add_argument(
        "--scheduler",
        metavar="PROFILE[,PROFILE...]" if several else "PROFILE",
        help=f"judge the cluster by this scheduler's rules: {names}, or {AUTO} (the default: "
        f"a scenario file's own scheduler block, or what the live sources show){compare}",
    )


def scheduler_choices(args: argparse.Namespace) -> tuple[ProfileName, ...] | None:
    """The profiles `--scheduler` names, in order; None for `auto` or no flag."""
    text: str | None = getattr(args, "scheduler", None)
    if text is None or text.strip() == AUTO:
        return None
    from advisor.core.profiles import PROFILES  # the model, only once the flag is given

    names = [name.strip() for name in text.split(",")]
    chosen: list[ProfileName] = []
    for name in names:
        if name == AUTO:
            raise InputError(f"--scheduler: {AUTO} stands alone, not in a list")
        if name not in PROFILES:
            known = ", ".join((*PROFILES, AUTO))
            shown = repr(name) if name else "(empty)"
            raise InputError(f"--scheduler: unknown profile {shown}; known: {known}")
        if name in chosen:
            raise InputError(f"--scheduler: {name} named twice")
        chosen.append(name)
    return tuple(chosen)


def scheduler_choice(args: argparse.Namespace) -> ProfileName | None:
    """The one profile `--scheduler` names; None for `auto` or no flag."""
    chosen = scheduler_choices(args)
    if chosen is not None and len(chosen) > 1:
        raise InputError("--scheduler: one profile here; only whatif compares several")
    return None if chosen is None else chosen[0]
