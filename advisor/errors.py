"""The errors that end a run of either program, under one root, and their exit codes.

Every error that ends a run is an `XgpuError`, raised where the problem is found, and
`exit_code` maps it to the process's exit status in this one place (docs/design.md §5):

- `InputError` (exit 2): a flag, a file or a value the user gave cannot be used. The
  scenario's `ScenarioError` and the trace's `TraceError` are kinds of it, living with what
  they guard (`advisor.scenario.strict`, `advisor.trace_rows`);
- `SourceError` (exit 2, as design §5 says of an unreachable source): a live source
  (Prometheus, the exporters, the Kubernetes API) cannot be reached or answered what no
  source may answer; `advisor.kubeconfig.KubeConfigError` is one;
- `InternalError` (exit 70, sysexits' EX_SOFTWARE): a rule of our own broken, a bug to
  report, never the user's input. It stands where an `assert` would, and unlike one it is
  not compiled away by `python -O`.

It lives below every layer that raises it (docs/architecture.md), so that no module has to
import a layer above its own to say what went wrong; `cli.py` (and the exporter's) print the
message as one line.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

T = TypeVar("T")

EXIT_OK = 0
EXIT_FINDINGS = 1  # `report --fail-on`: the findings reached the threshold
EXIT_INPUT = 2  # bad input or an unreachable source
EXIT_INTERNAL = 70  # a bug of ours (sysexits.h EX_SOFTWARE)


class XgpuError(Exception):
    """The root: an error that ends the run with `exit_code` and its message, one line."""

    exit_code: ClassVar[int] = EXIT_INPUT


class InputError(XgpuError):
    """Bad input (a flag, a file, a value): exit 2 with this message."""


class SourceError(XgpuError):
    """A live source that cannot be used: unreachable, refused, or an answer out of bounds."""


class InternalError(XgpuError):
    """A broken invariant of the advisor's own: a bug, exit 70."""

    exit_code: ClassVar[int] = EXIT_INTERNAL


def exit_code(error: BaseException) -> int:
    """The exit status a run that ends with `error` returns."""
    return error.exit_code if isinstance(error, XgpuError) else EXIT_INTERNAL


def known(value: T | None, what: str) -> T:
    """`value`, which a rule of our own says is set by now; InternalError naming `what`
    when it is not (where an `assert value is not None` would stand)."""
    if value is None:
        raise InternalError(f"internal error: {what} is not set (a bug: please report it)")
    return value
