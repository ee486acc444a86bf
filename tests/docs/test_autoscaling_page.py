"""docs/autoscaling.md quotes deploy/autoscaling/ as it is.

Every `yaml` block of the page is one of the shipped files (the HPA, the ScaledObject, the
Helm values) or a part of the adapter's rules, compared as parsed YAML (the files' comments
are theirs); each of them is quoted. The page's commands run in test_readme_commands.py
and its queries' behaviour is tested in tests/deploy/test_autoscaling.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.docs.test_readme_commands import parse_blocks

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "autoscaling.md"
AUTOSCALING = REPO / "deploy" / "autoscaling"
QUOTED = {
    "HorizontalPodAutoscaler": AUTOSCALING / "hpa.yaml",
    "ScaledObject": AUTOSCALING / "keda-scaledobject.yaml",
}
VALUES = AUTOSCALING / "prometheus-adapter" / "values.yaml"
RULES = AUTOSCALING / "prometheus-adapter" / "config.yaml"
Json = dict[str, Any]


def load(path: Path) -> Json:
    document: Json = yaml.safe_load(path.read_text())
    return document


def stale_quotes(text: str, name: str) -> tuple[list[str], set[str]]:
    """What the page's yaml blocks get wrong, one line each, and which files they quote."""
    wrong: list[str] = []
    quoted: set[str] = set()
    rules = load(RULES)["rules"]
    for block in parse_blocks(text, name):
        if block.language != "yaml":
            continue
        shown = yaml.safe_load(block.body)
        if "kind" in shown:
            source = QUOTED.get(shown["kind"])
            if source is None or shown != load(source):
                wrong.append(f"{block.where}: not {source or shown['kind']} as shipped")
            quoted.add(str(source))
        elif "prometheus" in shown:
            if shown != load(VALUES):
                wrong.append(f"{block.where}: not {VALUES.name} as shipped")
            quoted.add(str(VALUES))
        else:
            unknown = [rule for rule in shown.get("rules", [None]) if rule not in rules]
            if unknown:
                wrong.append(f"{block.where}: rules not in {RULES.name}: {unknown}")
            quoted.add(str(RULES))
    return wrong, quoted


def test_every_yaml_block_is_a_shipped_file_or_rule_and_each_is_quoted() -> None:
    wrong, quoted = stale_quotes(PAGE.read_text(), PAGE.name)
    assert wrong == []
    assert quoted == {str(p) for p in [*QUOTED.values(), VALUES, RULES]}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('averageValue: "60"', 'averageValue: "50"'),
        ("minReplicaCount: 2", "minReplicaCount: 3"),
        ("avg(<<.Series>>", "sum(<<.Series>>"),
        ("existing: xgpu-prometheus-adapter", "existing: adapter-rules"),
    ],
)
def test_a_stale_quote_is_named_with_its_line(old: str, new: str) -> None:
    text = PAGE.read_text()
    assert text.count(old) == 1, old
    wrong, _ = stale_quotes(text.replace(old, new), PAGE.name)
    assert len(wrong) == 1
    assert wrong[0].startswith(f"{PAGE.name}:")
