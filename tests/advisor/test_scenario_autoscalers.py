"""The scenario key `autoscalers` (docs/design.md §12.1): read strictly (one line naming the
file, the path and the problem; exit 2), written back as read, and reported by `diagnose`
and `report` in the form their shipped schemas name (§12.2)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from advisor import schemas
from advisor.cli import main
from advisor.core.hpa import Autoscaler, PodMetric
from advisor.scenario import ScenarioError, load_scenario, save_scenario, scenario_from_data
from tests.advisor.test_schemas import conforms

HPA: dict[str, Any] = {
    "name": "web/infer-hpa",
    "target": "Deployment/web/infer",
    "min_replicas": 2,
    "max_replicas": 5,
    "replicas": 1,
    "metrics": [{"pod_metric": "xgpu_core_percentage_used", "target_average": 60}],
}
BASE: dict[str, Any] = {
    "nodes": [{"name": "n1", "cards": [{"index": i, "memory_mib": 16384} for i in range(2)]}],
    "pods": [
        {
            "name": "web/infer-0",
            "node": "n1",
            "cards": [0],
            "request": {"gpus": 1, "memory_mib": 8192},
            "owner": "ReplicaSet/web/infer-7d9f8",
        }
    ],
    "autoscalers": [HPA],
}


def with_hpa(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data["autoscalers"][0].update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del data["autoscalers"][0][key]
    return data


def test_the_key_reads_into_frozen_values() -> None:
    (a,) = scenario_from_data(BASE, "s.yaml").autoscalers
    metric = PodMetric("xgpu_core_percentage_used", 60.0)
    assert a == Autoscaler("web/infer-hpa", "Deployment/web/infer", 2, 5, 1, (metric,))
    assert scenario_from_data({**BASE, "autoscalers": []}, "s.yaml").autoscalers == ()


@pytest.mark.parametrize(
    ("data", "where", "problem"),
    [
        (with_hpa(name="infer-hpa"), "autoscalers[0].name", "expected namespace/name"),
        (with_hpa(target="web/infer"), "autoscalers[0].target", "expected Kind/namespace/name"),
        (with_hpa(target="Deployment/ml/infer"), "autoscalers[0].target", "not in the namespace"),
        (with_hpa(max_replicas=1), "autoscalers[0].max_replicas", "below min_replicas"),
        (with_hpa(max_replicas=0), "autoscalers[0].max_replicas", "must be at least 1"),
        (with_hpa(replicas=-1), "autoscalers[0].replicas", "must be at least 0"),
        (with_hpa(replicas=None), "autoscalers[0].replicas", "missing"),
        (with_hpa(scale=3), "autoscalers[0].scale", "unknown key"),
        (
            with_hpa(metrics=[{"pod_metric": "m", "target_average": 0}]),
            "autoscalers[0].metrics[0].target_average",
            "must be a positive number",
        ),
        (
            with_hpa(metrics=[{"pod_metric": "m", "target_average": "60"}]),
            "autoscalers[0].metrics[0].target_average",
            "expected a number",
        ),
        (
            {**BASE, "autoscalers": [HPA, HPA]},
            "autoscalers[1].name",
            "duplicate autoscaler name",
        ),
        ({**BASE, "autoscalers": {"name": "x"}}, "autoscalers", "expected a list"),
    ],
)
def test_bad_input_is_one_line_naming_the_place(
    data: dict[str, Any], where: str, problem: str
) -> None:
    with pytest.raises(ScenarioError) as raised:
        scenario_from_data(data, "s.yaml")
    message = str(raised.value)
    assert message.startswith(f"s.yaml: {where}: "), message
    assert problem in message
    assert "\n" not in message


def test_a_bad_autoscaler_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(with_hpa(max_replicas=1)))
    assert main(["diagnose", "--scenario", str(path)]) == 2
    assert "autoscalers[0].max_replicas: below min_replicas" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_the_writer_writes_it_back(tmp_path: Path, suffix: str) -> None:
    cluster = scenario_from_data(BASE, "s.yaml")
    path = tmp_path / f"out{suffix}"
    save_scenario(path, cluster)
    assert load_scenario(path) == cluster
    written = yaml.safe_load(path.read_text())
    assert written["autoscalers"] == [HPA]  # 60 stays 60, as written
    plain = {k: v for k, v in BASE.items() if k != "autoscalers"}
    save_scenario(path, scenario_from_data(plain, "s.yaml"))
    assert "autoscalers" not in yaml.safe_load(path.read_text())  # absent: nothing written


RESIZE = (
    "by hand: add 1 node to the node pool of this shape (which one is not known: its nodes "
    "carry no cce.cloud.com/cce-nodepool label; nodes in none, CCE's DefaultPool, need a pool "
    "created)"
)


def test_diagnose_and_report_carry_the_reachable_replicas(tmp_path: Path) -> None:
    source = tmp_path / "s.yaml"
    lost = {**HPA, "name": "web/lost", "target": "Deployment/web/gone"}
    source.write_text(yaml.safe_dump({**BASE, "autoscalers": [HPA, lost]}))
    out = tmp_path / "d.json"
    assert (
        main(["diagnose", "--scenario", str(source), "--format", "json", "--output", str(out)]) == 0
    )
    data = json.loads(out.read_text())
    assert conforms(data, schemas.DIAGNOSIS_SCHEMA) == []
    blocked = {"cause": "capacity", "node_summary": "0/1 nodes are unavailable: 1 card-memory."}
    assert data["autoscalers"] == [
        {
            "name": "web/infer-hpa",
            "target": "Deployment/web/infer",
            "replicas": 1,
            "max_replicas": 5,
            "template": "web/infer-0",
            "placeable": 3,  # 24 GiB free in 8 GiB replicas: the fourth stays Pending
            "blocked": blocked,
            "status": "blocked",
            "remedy": {  # the fifth as a Pending pod: no room in total, a node of n1's shape
                "replicas": [
                    {
                        "pod": "web/infer (replica 5)",
                        "cause": "capacity",
                        "advice": {
                            "key": "capacity-scale-up",
                            "scale_up": True,
                            "why": "the cards that could hold it lack the free memory or core, "
                            "even in total",
                        },
                    }
                ],
                "plans": [],
                "held_back": [],
                "scale_up": [
                    {
                        "shape": {"cards": 2, "memory_mib": 16384, "model": ""},
                        "nodes": 1,
                        "for": ["web/infer (replica 5)"],
                        "actor": "person",  # cce: its Autoscaler add-on does not scale xGPU
                        "resize": RESIZE,
                    }
                ],
                "scale_up_not_triggered": [],
                "relief": [],
            },
        },
        {
            "name": "web/lost",
            "target": "Deployment/web/gone",
            "replicas": 1,
            "max_replicas": 5,
            "template": None,
            "placeable": None,
            "blocked": None,
            "status": "unknown-template",
            "remedy": None,
        },
    ]
    assert main(["report", "--scenario", str(source), "--output-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert conforms(report, schemas.REPORT_SCHEMA) == []
    assert report["diagnosis"]["autoscalers"] == data["autoscalers"]
    line = (
        "- web/infer-hpa (Deployment/web/infer): 3 of 4 more replicas place; the next stays "
        "Pending (capacity: 0/1 nodes are unavailable: 1 card-memory.)"
    )
    room = (
        "  - What would make room for the replicas left Pending, as for Pending pods:\n"
        "    - Capacity, scale up: web/infer (replica 5).\n"
        "    - Scale up: 1 node of 2 × 16,384 MiB cards, any model, for web/infer (replica 5) "
        f"({RESIZE})."
    )
    lost_line = "- web/lost (Deployment/web/gone): no running pod to copy a replica from"
    markdown = tmp_path / "d.md"
    assert main(["diagnose", "--scenario", str(source), "--output", str(markdown)]) == 0
    for text in (markdown.read_text(), (tmp_path / "report.md").read_text()):
        assert f"## Autoscalers\n\n{line}\n{room}\n{lost_line}" in text


def test_the_report_s_series_are_its_json_s(tmp_path: Path) -> None:
    """One decision, two outputs: the textfile's autoscaler series hold what report.json
    says of each autoscaler (placeable and blocked absent for the unknown-template one)."""
    source = tmp_path / "s.yaml"
    lost = {**HPA, "name": "web/lost", "target": "Deployment/web/gone"}
    source.write_text(yaml.safe_dump({**BASE, "autoscalers": [HPA, lost]}))
    prom = tmp_path / "xgpu_advisor.prom"
    args = ["report", "--scenario", str(source), "--output-dir", str(tmp_path)]
    assert main([*args, "--textfile", str(prom)]) == 0
    listed = json.loads((tmp_path / "report.json").read_text())["diagnosis"]["autoscalers"]
    series: dict[str, dict[tuple[str, ...], float]] = {}
    for family in text_string_to_metric_families(prom.read_text()):
        for sample in family.samples:
            if sample.name.startswith("xgpu_advisor_autoscaler_"):
                key = tuple(sample.labels[k] for k in ("autoscaler", "cause") if k in sample.labels)
                series.setdefault(sample.name, {})[key] = sample.value
    assert series["xgpu_advisor_autoscaler_replicas"] == {
        (a["name"],): a["replicas"] for a in listed
    }
    assert series["xgpu_advisor_autoscaler_max_replicas"] == {
        (a["name"],): a["max_replicas"] for a in listed
    }
    assert series["xgpu_advisor_autoscaler_placeable_replicas"] == {("web/infer-hpa",): 3}
    assert series["xgpu_advisor_autoscaler_blocked"] == {("web/infer-hpa", "capacity"): 1}
    assert [a["status"] for a in listed] == ["blocked", "unknown-template"]
