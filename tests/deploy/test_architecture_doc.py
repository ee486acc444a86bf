"""docs/architecture.md against the import contracts `make lint` enforces (pyproject.toml,
`[tool.importlinter]`): the layers the page draws are the ones checked, in the same order,
and every module the page names in its tables exists."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from tests.realparts import REPO

DOC = REPO / "docs" / "architecture.md"


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def drawn_layers(heading: str = "## The layers") -> list[str]:
    """The first code block after `heading`: one layer per line, wrapped lines and
    their descriptions dropped (a layer line starts at column 0)."""
    section = DOC.read_text().split(f"\n{heading}\n", 1)[1]
    block = re.search(r"^```(?:text)?\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert block is not None
    layers = []
    for line in block.group(1).splitlines():
        if line and not line.startswith(" "):
            layers.append(re.split(r"\s{2,}", line.strip())[0])
    return layers


def test_the_page_draws_the_checked_layers_in_order() -> None:
    layers = contracts()["advisor-layers"]["layers"]
    assert drawn_layers() == layers


def test_the_page_draws_the_benchmarks_layers_in_order() -> None:
    assert drawn_layers("### The benchmarks") == contracts()["benchmarks-layers"]["layers"]


def test_the_layers_contract_is_exhaustive() -> None:
    """A new module must be given a layer; a page that lists every layer lists every module."""
    assert contracts()["advisor-layers"]["exhaustive"] is True
    assert contracts()["benchmarks-layers"]["exhaustive"] is True


def test_every_module_the_tables_name_exists() -> None:
    text = DOC.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    named = set()
    for row in rows:
        for path in re.findall(r"`((?:advisor|exporter)/[\w/]+\.py|[\w/]+/[\w]+\.py)`", row):
            named.add(path)
    assert len(named) > 30  # the pattern finds them
    for path in sorted(named):
        top = path.split("/", 1)[0]
        # Relative names are the advisor's, or (in the renderer table) render's own.
        places = (
            [REPO]
            if top in ("advisor", "exporter", "tests", "benchmarks", "deploy")
            else [REPO / "advisor", REPO / "advisor" / "render"]
        )
        assert any((place / path).exists() for place in places), path


def test_the_page_draws_the_core_layers_in_order() -> None:
    """The core's own layers (state above its profiles) as the page writes them: `a` → `b`."""
    layers = contracts()["core-profiles-below-state"]["layers"]
    text = " ".join(DOC.read_text().split())
    assert " → ".join(f"`{layer}`" for layer in layers) in text


def package_rows() -> set[str]:
    """The first column of the "## Packages" table."""
    section = DOC.read_text().split("## Packages", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([\w.]+)` \|", section, re.MULTILINE))


def packages() -> set[str]:
    roots = ("advisor", "exporter", "dashboards", "benchmarks", "conformance")
    return {
        ".".join(init.parent.relative_to(REPO).parts)
        for root in roots
        for init in (REPO / root).rglob("__init__.py")
    }


def test_every_package_has_one_row_saying_what_it_owns() -> None:
    assert len(packages()) > 10  # the scan finds them
    assert package_rows() == packages()
