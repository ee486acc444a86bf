"""An independent replay of scale-down steps (docs/design.md §8, scale-down), with
`diagnose` only: each step's node is removed, its GPU pods re-queued after the Pending ones,
and one scheduling cycle must land them where the step says while every Pending pod that
landed before still lands. It shares nothing with advisor/core/scaling/down.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster
from advisor.core.scaling.down import ScaleDown, node_utilisation
from advisor.scenario import scenario_from_data, scenario_to_data


def replay_steps(cluster: Cluster, steps: Sequence[ScaleDown], threshold: float) -> Cluster:
    """The cluster after every step, each checked as it is applied (AssertionError if not)."""
    must_land = {d.pod.name for d in diagnose(cluster).pods if d.placement}
    current = cluster
    for step in steps:
        assert node_utilisation(current)[step.node] < threshold, step.node
        on_node = [p for p in current.running if p.placement and p.placement.node == step.node]
        assert set(step.moves) == {p.name for p in on_node}, step.node
        nodes = tuple(n for n in current.nodes if n.name != step.node)
        stay = tuple(p for p in current.running if p not in on_node)
        # a drained pod comes back as a new pod of the same spec, queued after the others
        requeued = tuple(replace(p, placement=None) for p in on_node)
        trial = replace(current, nodes=nodes, pods=stay + current.pending + requeued)
        landed = {d.pod.name: d.placement for d in diagnose(trial).pods if d.placement}
        assert {name: landed.get(name) for name in step.moves} == dict(step.moves), step.node
        assert must_land <= landed.keys(), step.node
        moved = tuple(replace(p, placement=step.moves[p.name]) for p in on_node)
        current = replace(current, nodes=nodes, pods=stay + moved + current.pending)
        scenario_from_data(scenario_to_data(current), "after.yaml")  # raises on any overflow
    return current
