"""The generator and the shrinker of the differential test, without the Go harness."""

from __future__ import annotations

from typing import Any

from advisor.core.occupancy import build_state
from advisor.scenario import scenario_from_data
from conformance.compare import Verdicts, compare, filter_of, shrink
from conformance.generate import generate


def test_same_seed_same_cluster() -> None:
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)


def test_every_generated_cluster_loads_and_reaches_the_boundaries() -> None:
    exact_card = exact_cpu = tolerated = 0
    for seed in range(200):
        data = generate(seed)
        cluster = scenario_from_data(data, f"seed {seed}")  # raises on anything invalid
        state = build_state(cluster)
        free = {int(f) for f in state.free_memory}
        for pod in cluster.pending:
            exact_card += pod.request.card_memory_mib in free
            tolerated += bool(pod.constraints.tolerations)
        cpu_left = {int(c) for c in state.allocatable[:, 1] - state.requested[:, 1]}
        exact_cpu += any(p.resources.cpu_milli in cpu_left for p in cluster.pending)
    assert exact_card > 50
    assert exact_cpu > 30
    assert tolerated > 20


def test_filter_of_keeps_the_decision_not_the_words() -> None:
    old = ("node(s) had untolerated taint {gpu: yes}",)
    new = ("node(s) had untolerated taint(s)",)
    assert filter_of(old) == filter_of(new) == ("TaintToleration",)
    assert filter_of(("Insufficient cpu",)) != filter_of(("Insufficient cpu", "Too many pods"))
    assert filter_of(()) == ()


def test_compare_counts_a_differing_node() -> None:
    data = {"nodes": [{"name": "a"}, {"name": "b"}]}
    ours: Verdicts = {"ns/p": {"a": ("Insufficient cpu",)}}
    assert compare(data, ours, ours)[:3] == (1, 1, 1)
    pods, agree, _, diffs = compare(data, ours, {"ns/p": {}})
    assert (pods, agree) == (1, 0)
    assert diffs == ["ns/p on a: advisor ['Insufficient cpu'], upstream passes"]


def test_shrink_keeps_only_what_the_disagreement_needs() -> None:
    data = generate(3, max_nodes=4, max_pending=5)
    data["pods"].append(
        {"name": "ml/witness", "request": {"gpus": 1}, "tolerations": [{"operator": "Exists"}]}
    )

    def witness(d: dict[str, Any]) -> bool:  # stands in for "still disagrees"
        return any(p["name"] == "ml/witness" and "tolerations" in p for p in d["pods"])

    small = shrink(data, witness)
    assert len(small["nodes"]) == 1
    assert [p["name"] for p in small["pods"]] == ["ml/witness"]
    assert all(set(n) <= {"name", "cards"} for n in small["nodes"])
