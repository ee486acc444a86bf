"""advisor.errors: one root for every error that ends a run, one map to exit codes, and no
`assert` in product code standing where a real error is meant (`errors.known` instead)."""

from __future__ import annotations

import ast

import pytest

from advisor.cli import main
from advisor.commands import diagnose as diagnose_command
from advisor.errors import InputError, InternalError, SourceError, exit_code, known
from advisor.kubeconfig import KubeConfigError
from advisor.scenario import ScenarioError
from advisor.trace_rows import TraceError
from tests.fuzz.hostile import run_main
from tests.realparts import DEMO, REPO

PRODUCT = ("advisor", "exporter", "dashboards")


def asserts_in(source: str, name: str) -> list[str]:
    """`name:line` of every assert statement in `source`."""
    tree = ast.parse(source, name)
    return [f"{name}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Assert)]


def test_the_scan_finds_an_assert() -> None:
    snippet = "def f(x):\n    if x:\n        assert x is not None, 'why'\n    return x\n"
    assert asserts_in(snippet, "m.py") == ["m.py:3"]


def test_no_product_module_asserts() -> None:
    """An assert is compiled away by `python -O` and ends a run with a traceback: a rule of
    our own that must hold raises InternalError (errors.known) instead."""
    found = [
        hit
        for package in PRODUCT
        for path in sorted((REPO / package).rglob("*.py"))
        for hit in asserts_in(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert found == []


def test_every_error_that_ends_a_run_has_one_root_and_one_exit_code() -> None:
    """errors.exit_code is the one map from an error to an exit status: input and source
    errors (the scenario's, the trace's, the kubeconfig's among them) exit 2, an internal one
    70, anything else (an exception nobody meant) 70 as well."""
    assert issubclass(ScenarioError, InputError)
    assert issubclass(TraceError, InputError)
    assert issubclass(KubeConfigError, SourceError)
    assert [exit_code(e) for e in (ScenarioError("f: x: bad"), TraceError("f: line 1: bad"))] == [
        2,
        2,
    ]
    assert exit_code(KubeConfigError("no config")) == 2
    assert exit_code(InternalError("broken")) == 70
    assert exit_code(ValueError("unmeant")) == 70


def test_an_internal_error_is_one_line_and_exit_70(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken invariant (where an assert would stand) ends the CLI in one line naming it."""

    def broken(args: object) -> int:
        return known(None, "the placement of running pod ml/a")

    monkeypatch.setattr(diagnose_command, "run", broken)
    outcome = run_main(main, ["diagnose", "--scenario", str(DEMO)])
    assert (outcome.code, outcome.stdout) == (70, "")
    assert outcome.stderr == (
        "xgpu-advisor: error: internal error: the placement of running pod ml/a is not set "
        "(a bug: please report it)\n"
    )
