"""MIG keys of a scenario (advisor.scenario.mig, docs/design.md §13.1): read, checked against
the card's profile table (one line naming the place, exit 2 at the CLI), written back."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.scenario import ScenarioError, scenario_from_data, scenario_to_data

A100 = "NVIDIA A100-SXM4-40GB"


def _scenario(instances: list[dict[str, Any]], **node: Any) -> dict[str, Any]:
    card = {"index": 0, "memory_mib": 40960, "model": A100, "mig": {"instances": instances}}
    return {
        "nodes": [{"name": "m", "mig_strategy": "mixed", "cards": [card], **node}],
        "pods": [
            {
                "name": "ml/a",
                "node": "m",
                "request": {"gpus": 1, "mig_profile": "1g.5gb"},
                "mig_instances": [{"card": 0, "start": 0}],
            },
            {"name": "ml/p", "request": {"gpus": 1, "mig_profile": "3g.20gb"}},
        ],
    }


GOOD = [{"profile": "1g.5gb", "start": 0}, {"profile": "3g.20gb", "start": 4}]


def test_the_design_example_round_trips() -> None:
    cluster = scenario_from_data(_scenario(GOOD), "s.yaml")
    card = cluster.nodes[0].cards[0]
    assert [(i.profile, i.start) for i in card.mig or ()] == [("1g.5gb", 0), ("3g.20gb", 4)]
    assert cluster.nodes[0].mig_strategy == "mixed"
    assert cluster.pods[0].mig_instances == ((0, 0),)
    assert cluster.pods[1].request.mig_profile == "3g.20gb"
    assert scenario_from_data(scenario_to_data(cluster), "again.yaml") == cluster


@pytest.mark.parametrize(
    ("instances", "node", "message"),
    [
        (
            [{"profile": "2g.20gb", "start": 0}],
            {},
            "s.yaml: nodes[0].cards[0].mig.instances[0]: profile 2g.20gb is not one of",
        ),
        (
            [{"profile": "3g.20gb", "start": 2}],
            {},
            "s.yaml: nodes[0].cards[0].mig.instances[0]: 3g.20gb may start only at slice 0, "
            "4, not 2",
        ),
        (
            [{"profile": "4g.20gb", "start": 0}, {"profile": "1g.5gb", "start": 0}],
            {},
            "s.yaml: nodes[0].cards[0].mig.instances[1]: 1g.5gb at slice 0 overlaps another",
        ),
        (GOOD, {"mig_strategy": "none"}, "s.yaml: nodes[0].cards[0].mig: MIG instances on a"),
        (GOOD, {"mig_strategy": "single"}, "s.yaml: nodes[0].mig_strategy: single needs every"),
        (GOOD, {"mig_strategy": "both"}, "s.yaml: nodes[0].mig_strategy: expected one of none"),
    ],
)
def test_a_bad_layout_is_one_line_naming_its_place(
    instances: list[dict[str, Any]], node: dict[str, Any], message: str
) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario_from_data(_scenario(instances, **node), "s.yaml")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_a_bound_pod_must_hold_an_instance_of_its_profile() -> None:
    data = _scenario(GOOD)
    data["pods"][0]["mig_instances"] = [{"card": 0, "start": 4}]  # the 3g.20gb
    with pytest.raises(ScenarioError, match=r"pods\[0\]\.mig_instances\[0\]: m card 0 has no"):
        scenario_from_data(data, "s.yaml")


def test_a_vgpu_pod_may_not_sit_on_a_mig_card() -> None:
    data = _scenario(GOOD)
    data["pods"].append(
        {"name": "v/a", "node": "m", "cards": [0], "request": {"gpus": 1, "memory_mib": 1024}}
    )
    with pytest.raises(ScenarioError, match=r"pods\[2\]\.cards\[0\]: m card 0 is in MIG mode"):
        scenario_from_data(data, "s.yaml")


def test_mig_needs_a_tabled_model() -> None:
    data = _scenario(GOOD)
    data["nodes"][0]["cards"][0]["model"] = "Tesla T4"
    with pytest.raises(ScenarioError, match=r"nodes\[0\]\.cards\[0\]\.model: MIG needs"):
        scenario_from_data(data, "s.yaml")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"cards": [0]},
            r"pods\[0\]\.mig_instances: a running MIG pod gives node and mig_instances, not cards",
        ),
        ({"mig_instances": []}, r"pods\[0\]\.mig_instances: a running MIG pod holds at least"),
        (
            {"request": {"gpus": 1, "memory_mib": 1024}},
            r"pods\[0\]\.mig_instances: only a MIG pod \(request\.mig_profile\) holds them",
        ),
    ],
)
def test_a_bound_mig_pod_names_its_instances(change: dict[str, Any], message: str) -> None:
    data = _scenario(GOOD)
    data["pods"][0].update(change)
    with pytest.raises(ScenarioError, match=message):
        scenario_from_data(data, "s.yaml")


def test_a_bound_mig_pod_without_instances_is_refused() -> None:
    data = _scenario(GOOD)
    del data["pods"][0]["mig_instances"]
    with pytest.raises(ScenarioError, match=r"pods\[0\]: a running MIG pod gives mig_instances"):
        scenario_from_data(data, "s.yaml")
