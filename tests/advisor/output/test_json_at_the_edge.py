"""JSON only at the edge: the core returns typed values, `advisor.output` alone writes them as
the JSON Schemas' TypedDicts (advisor/schemas). A function in the core that returns a bare
`dict[str, Any]` or is named for JSON is a JSON form that belongs in `advisor.output`."""

from __future__ import annotations

import ast
from pathlib import Path

import advisor.core

CORE = Path(advisor.core.__file__).parent


def json_forms(source: str) -> list[str]:
    """The functions and methods in `source` that build JSON: named `*json*`, or annotated to
    return `dict[str, Any]` (however `typing` was imported)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        returns = ast.unparse(node.returns).replace(" ", "") if node.returns else ""
        untyped = returns.strip("'\"") in ("dict[str,Any]", "dict[str,typing.Any]")
        if "json" in node.name.lower() or untyped:
            found.append(f"{node.name} (line {node.lineno})")
    return found


def test_the_scan_finds_json_forms() -> None:
    snippet = """
from typing import Any
import typing

class Value:
    def json(self) -> dict[str, Any]: ...
    def as_dict(self) -> "dict[str, Any]": ...

def summary_JSON(f: object) -> object: ...
def table(f: object) -> dict[str, typing.Any]: ...
async def fetched() -> dict[str,  Any]: ...
def typed(f: object) -> dict[str, int]: ...
def jason(f: object) -> object: ...
"""
    found = {name.split()[0] for name in json_forms(snippet)}
    assert found == {"json", "as_dict", "summary_JSON", "table", "fetched"}


def test_the_core_returns_no_json() -> None:
    modules = sorted(CORE.rglob("*.py"))
    assert len(modules) > 10  # the scan sees the core, not an empty folder
    found = {
        str(path.relative_to(CORE)): forms
        for path in modules
        if (forms := json_forms(path.read_text()))
    }
    assert found == {}, "JSON forms belong in advisor.output"
