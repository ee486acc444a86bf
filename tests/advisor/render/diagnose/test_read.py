"""render.diagnose.read: the advisor's own diagnosis reads back unchanged; a saved one with
odd values reads as the neutral defaults the pages show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.diagnosis import CAUSES
from advisor.output import diagnosis_json
from advisor.render.diagnose.read import read_diagnosis
from advisor.scenario import load_scenario

EXAMPLES = Path(__file__).parents[4] / "advisor" / "examples"


@pytest.mark.parametrize(
    "scenario", ["demo.yaml", "hami.yaml", "report-sample.yaml", "training.yaml"]
)
def test_the_advisors_own_diagnosis_reads_back_unchanged(scenario: str) -> None:
    cluster = load_scenario(EXAMPLES / scenario)
    written: dict[str, Any] = json.loads(
        json.dumps(diagnosis_json(diagnose(cluster), cluster.scheduler))
    )
    assert written["pods"]
    assert read_diagnosis(written) == written


def test_odd_values_become_the_defaults_and_the_counts_come_from_the_pods() -> None:
    raw = {
        "policy": "binpack",  # not an object: both policies default to binpack
        "pods": [
            {"pod": 7, "cause": "capacity", "cluster_free_sufficient": 1, "request": {}},
            {"pod": "a/b", "cause": "fragmentation", "placement": [], "nodes": {"n1": "x"}},
            "not a pod",
        ],
        "summary": {"capacity": "many"},  # a count that is not one reads as 0
    }
    data = read_diagnosis(raw)
    assert data["policy"] == {"node": "binpack", "card": "binpack"}
    first, second, third = data["pods"]
    assert (first["pod"], first["request"], first["cluster_free_sufficient"]) == ("?", None, True)
    assert (second["placement"], second["nodes"]) == (None, {"n1": []})
    assert (third["pod"], third["cause"]) == ("?", "unknown")
    # capacity from the summary (0: "many" is no count); the others counted from the pods
    expected = dict.fromkeys(CAUSES, 0) | {"fragmentation": 1, "pending": 3}
    assert data["summary"] == expected
