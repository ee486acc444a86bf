"""The simulated reading source: the scenario's node, usage moving inside allotments."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.scenario import load_scenario
from exporter.scenario_pods import allotments_from_cluster
from exporter.simulate import SimulatedReader
from tests.fastloop import examples

DATA = Path(__file__).parent / "data"
CLUSTER = load_scenario(DATA / "exporter-node.yaml")
NODE = next(n for n in CLUSTER.nodes if n.name == "gpu-node-1")
ALLOTMENTS = allotments_from_cluster(CLUSTER, "gpu-node-1")


def reader_at(t: float, seed: int = 0) -> SimulatedReader:
    return SimulatedReader(NODE, lambda: ALLOTMENTS, seed=seed, clock=lambda: t)


def test_cards_come_from_the_scenario_node() -> None:
    got = reader_at(0.0).read()
    assert [(c.index, c.uuid, c.name) for c in got.cards] == [
        (c.index, c.uuid, c.model) for c in NODE.cards
    ]
    assert [c.healthy for c in got.cards] == [True, True, True, False]
    assert got.errors == ()
    assert len(got.processes) == len(ALLOTMENTS) == 3


@settings(max_examples=examples(200), deadline=None)
@given(t=st.floats(0, 1e9, allow_nan=False), seed=st.integers(0, 2**31))
def test_usage_never_exceeds_what_is_allotted(t: float, seed: int) -> None:
    got = reader_at(t, seed).read()
    by_pid = {p.pid: p for p in got.processes}
    core_on_card: dict[int, float] = defaultdict(float)
    for pid, allotment in zip(sorted(by_pid), ALLOTMENTS, strict=True):
        process = by_pid[pid]
        assert process.gpu_index == int(allotment.card)
        assert process.memory_used_bytes is not None
        assert 0 < process.memory_used_bytes <= allotment.memory_bytes
        assert process.sm_utilization_ratio is not None
        core = process.sm_utilization_ratio * 100
        if allotment.core_percent:
            assert 0 <= core <= allotment.core_percent
        core_on_card[process.gpu_index] += core
    assert all(total <= 100 for total in core_on_card.values())
    for card in got.cards:
        assert card.memory_used_bytes is not None
        assert card.memory_total_bytes is not None
        assert card.memory_used_bytes <= card.memory_total_bytes


def test_deterministic_for_a_seed_and_moving_with_time() -> None:
    assert reader_at(1000.0, seed=7).read() == reader_at(1000.0, seed=7).read()
    readings = {reader_at(1000.0 + 20 * i).read().processes for i in range(5)}
    assert len(readings) == 5


def test_owners_name_the_allotments_processes() -> None:
    reader = reader_at(0.0)
    got = reader.read()
    owners = reader.owners([p.pid for p in got.processes] + [1])
    assert 1 not in owners
    assert {o.pod_uid for o in owners.values()} == {a.pod_uid for a in ALLOTMENTS}
