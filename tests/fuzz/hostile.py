"""Hostile values and the property every reader is held to.

Values are the classes that have crashed readers before (docs: README "Fuzzing"): integers
beyond int64 and with thousands of digits, 1e30, NaN and infinities, digits `int()` refuses
though `str.isdigit()` takes them ("²"), NUL bytes, byte-order marks, control and
bidirectional characters, empty and blank strings, wrong types, deep nesting.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

HUGE_INTS = [2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**100, 10**4000]
FLOATS = [1e30, -1e30, 1e308, float("nan"), float("inf"), float("-inf"), 0.5, -0.0, 5e-324]
TEXTS = [
    "",
    " ",
    "²",
    "١٢",
    "1_000",
    "0x10",
    "1e3",
    "1e30",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "-1",
    "-0",
    "0",
    "9" * 30,
    "9" * 5000,
    "\x00",
    "a\x00b",
    "\ufeff",
    "\ufeffname",
    "\x1b[2J",
    "\u202eevil",
    "a\nb",
    "\r",
    "~",
    "null",
    "yes",
    "<<",
    "*a",
    "&a",
    "!!python/object:os.system",
    "ns/",
    "/pod",
    "a/b/c",
    "ümlaut/pöd",
    "x" * 300,
]


def hostile_scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(HUGE_INTS),
        st.sampled_from(FLOATS),
        st.sampled_from(TEXTS),
        st.sampled_from([None, True, False, 0, -1, 1, [], {}]),
        st.integers(),
        st.floats(),
        st.text(max_size=12),
    )


def deep(levels: int, leaf: Any = 1) -> Any:
    """A list nested `levels` deep (built without recursion)."""
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def hostile_values() -> st.SearchStrategy[Any]:
    """Scalars, wrong-typed containers of them, and deep nesting."""
    return st.one_of(
        hostile_scalars(),
        st.lists(hostile_scalars(), max_size=3),
        st.dictionaries(st.sampled_from(["name", "index", "x", ""]), hostile_scalars(), max_size=3),
        st.sampled_from([65, 100]).map(deep),  # deeper: text edits (mutate.py)
    )


def hostile_texts() -> st.SearchStrategy[str]:
    """What a flag, a CSV cell or an annotation can be given."""
    return st.one_of(
        st.sampled_from(TEXTS),
        st.sampled_from([str(n) for n in HUGE_INTS] + [str(f) for f in FLOATS]),
        st.text(max_size=20),
        st.integers().map(str),
        st.floats().map(repr),
    )


def assert_one_line(text: str, what: str) -> None:
    """The error is one non-empty line, ending with its line break."""
    assert text.endswith("\n"), (what, text)
    assert text.count("\n") == 1, (what, text)
    assert text.strip(), (what, text)
    assert "Traceback" not in text, (what, text)


ADVISOR_ERROR = r"xgpu-advisor( [a-z]+)?: error: "
EXPORTER_ERROR = r"xgpu-exporter: "


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


def run_main(main: Callable[[Sequence[str]], int], argv: Sequence[str]) -> Outcome:
    """A CLI's `main(argv)` in-process, with stdout and stderr captured; argparse's exit
    (SystemExit) becomes the exit code. Any other exception propagates: a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    return Outcome(code, out.getvalue(), err.getvalue())


def assert_clean_exit(
    outcome: Outcome, argv: Sequence[str], prefix: str, allowed: Sequence[int] = (0, 2)
) -> None:
    """Exit 0 or 2 (or another of `allowed`); exit 2 says why in exactly one line, the
    last on stderr (warnings may come before it), matching `prefix` (a regular expression:
    argparse names the subcommand, "xgpu-advisor report: error: ...")."""
    assert outcome.code in allowed, (argv, outcome)
    assert "Traceback" not in outcome.stderr, (argv, outcome.stderr)
    if outcome.code == 2:
        lines = outcome.stderr.splitlines()
        errors = [line for line in lines if re.match(prefix, line)]
        assert len(errors) == 1, (argv, outcome.stderr)
        assert lines[-1] == errors[0], (argv, outcome.stderr)
        assert outcome.stderr.endswith(errors[0] + "\n"), (argv, outcome.stderr)
