"""advisor/metricnames.py, the metric contract, against what documents it and what reads it.

The exporter's and advisor's exposition tests check their series against the module; these
tests hold the module itself to the two documents a user reads (README's metric reference,
docs/design.md §6) and to the rules, and check that no product module spells a name itself.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

from advisor import metricnames
from tests.deploy.test_docs import documented, documented_labels

REPO = Path(__file__).resolve().parents[2]
DESIGN = REPO / "docs" / "design.md"
RULES = REPO / "deploy" / "rules" / "xgpu.rules.yaml"
COEXISTENCE = REPO / "deploy" / "rules" / "coexistence.rules.yaml"
DASHBOARDS = sorted((REPO / "dashboards" / "json").glob("*.json"))
# A metric name in a query, recorded (level:metric:operation) or not; a label (xgpu_source=)
# is not one.
READ = re.compile(
    r"(?<![\w:])(?:[a-z_]+:)?(?:xgpu_|gpu_schedule_policy)\w*(?::[a-z]+)?(?![\w:])"
    r"(?!\s*(?:=|!=|=~|!~))"
)
# Where the names are read or written: each takes them from the module.
PRODUCT = sorted(
    path
    for pattern in ("advisor/**/*.py", "exporter/**/*.py", "dashboards/**/*.py")
    for path in REPO.glob(pattern)
    if path.name != "metricnames.py"
)
README_SECTIONS = {"exporter": "### Exporter series", "advisor": "### Advisor series"}


@pytest.mark.parametrize("source", ["exporter", "advisor"])
def test_every_family_is_the_readme_s_row(source: str) -> None:
    rows = documented(README_SECTIONS[source])
    families = {f.name: f for f in metricnames.FAMILIES if f.source == source}
    assert set(families) == set(rows)
    for name, family in families.items():
        assert rows[name]["type"] == family.kind, name
        assert documented_labels(rows[name]) == set(family.labels), name
        # the README's meaning may say more than HELP, never something else
        assert rows[name]["meaning"], name


def test_the_contract_is_design_s_section_6() -> None:
    design = DESIGN.read_text()
    text = design[design.index("## 6.") : design.index("## 7.")]
    named = set(re.findall(r"`((?:xgpu_|gpu_schedule_policy)\w*)", text))
    assert named == metricnames.NAMES


def test_cce_names_are_the_six_of_design_s_table() -> None:
    design = DESIGN.read_text()
    text = design[design.index("CCE-compatible names") : design.index("`--no-collector.cce`")]
    assert set(re.findall(r"^\| `(\w+)`", text, re.MULTILINE)) == metricnames.CCE_NAMES


def test_the_recorded_names_are_the_rules_file_s() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    records = {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}
    assert records == metricnames.RECORDED


def _rules(path: Path) -> list[dict[str, str]]:
    groups = yaml.safe_load(path.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


@pytest.mark.parametrize("path", [RULES, COEXISTENCE], ids=lambda p: p.name)
def test_the_rules_read_only_names_the_module_defines(path: Path) -> None:
    rules = _rules(path)
    own = {rule["record"] for rule in rules if "record" in rule}  # steps of the same file
    read = {name for rule in rules for name in READ.findall(rule["expr"])}
    assert metricnames.MEMORY_TOTAL.name in read  # the pattern finds names
    assert read - metricnames.NAMES - own == set()


def test_the_dashboards_query_only_names_the_module_defines() -> None:
    assert DASHBOARDS
    read: set[str] = set()
    for path in DASHBOARDS:
        for key, value in _fields(json.loads(path.read_text())):
            if key in {"expr", "query", "definition"}:
                read |= set(READ.findall(value))
    assert metricnames.NODE_ALLOTTED in read
    assert metricnames.CARD_INFO.name in read
    assert metricnames.SCHEDULING_LATENCY.name + "_bucket" in read  # a histogram's samples
    assert read - metricnames.SERIES - metricnames.RECORDED == set()


def _fields(value: object) -> list[tuple[str, str]]:
    """Every string field of a JSON document, with its key, at any depth."""
    if isinstance(value, dict):
        return [
            pair
            for key, item in value.items()
            for pair in ([(key, item)] if isinstance(item, str) else _fields(item))
        ]
    if isinstance(value, list):
        return [pair for item in value for pair in _fields(item)]
    return []


def test_a_counter_s_family_is_named_without_total() -> None:
    counters = [f for f in metricnames.FAMILIES if f.kind == "counter"]
    assert counters
    for family in counters:
        assert family.name.endswith("_total"), family.name
        assert family.family_name + "_total" == family.name
    assert metricnames.NODE_INFO.family_name == "xgpu_node_info"
    assert f"{metricnames.MEMORY_USED}" == "xgpu_memory_used"  # queries are f-strings


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """String literals and the literal parts of f-strings, docstrings left out (prose)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def _query_shaped(names: frozenset[str]) -> re.Pattern[str]:
    """A name as a query or a lookup spells it: alone, before a selector or a range, or at
    the end of a literal that an f-string continues (prose such as "(xgpu_device_health = 1)"
    in a panel's description is left alone)."""
    alternatives = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    return re.compile(rf"(?<![\w:])({alternatives})(?=\{{|\[|$)")


def test_no_product_module_spells_a_metric_name() -> None:
    pattern = _query_shaped(metricnames.NAMES | metricnames.RECORDED)
    spelled = [
        f"{path.relative_to(REPO)}:{line}: {text!r}"
        for path in PRODUCT
        for line, text in _strings(ast.parse(path.read_text()))
        if pattern.search(text)
    ]
    assert spelled == []


def test_the_spelling_check_finds_a_spelled_name() -> None:
    """The check above against code written the old way, so that it cannot pass vacuously."""
    old = (
        'NODE_INFO = "xgpu_node_info"\n'
        'Query(f"sum(node:xgpu_memory_allotted_bytes:sum{{{NODE}}})")\n'
        'Q = "sum by (node) (rate(xgpu_exporter_nvml_errors_total" f"{{{NODE}}}[5m]))"\n'
        'HELP = "Cards NVML reports unhealthy (xgpu_device_health = 1)."\n'
    )
    pattern = _query_shaped(metricnames.NAMES | metricnames.RECORDED)
    found = sorted(line for line, text in _strings(ast.parse(old)) if pattern.search(text))
    assert found == [1, 2, 3]
    assert len(PRODUCT) > 100
