"""A cluster's card occupancy: every running pod bound on a fresh `CardState`.

The last cluster built keeps a copy of its state: one report builds the input's state in
several places (the cycle, fragmentation, headroom), each then changes its own copy. A
Cluster is frozen, so the same object always builds the same state.
"""

from __future__ import annotations

from advisor.core.mig_cycle import is_mig
from advisor.core.model import Cluster
from advisor.core.state import CardState, Shape
from advisor.errors import known

_last_built: tuple[Cluster, CardState] | None = None  # the last cluster and its state


def build_state(cluster: Cluster) -> CardState:
    """Card occupancy with every running pod bound (the scenario loader vouches for them)."""
    global _last_built
    if _last_built is not None and _last_built[0] is cluster:
        return _last_built[1].copy()
    state = _built(cluster)
    _last_built = (cluster, state.copy())
    return state


def forget_built_state() -> None:
    """Drop the copy `build_state` keeps (a caller done with the cluster frees its memory)."""
    global _last_built
    _last_built = None


def _built(cluster: Cluster) -> CardState:
    state = CardState(cluster)
    for pod in cluster.running:
        placement = known(pod.placement, f"the placement of running pod {pod.name}")
        positions = state.positions(placement)  # none for a MIG pod's cards
        if is_mig(pod):  # its instances are the MigBook's; its node's cpu and memory here
            state.add_requested(state.node_index[placement.node], Shape.of_pod(pod).demand)
        else:
            state.apply(positions, Shape.of_pod(pod))
    return state
