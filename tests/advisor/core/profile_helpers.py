"""Plumbing for the tests that replay HAMi's and Volcano's own test tables under the
`hami` and `volcano-vgpu` profiles (docs/design.md §9.2).

Each case is written as scenario data (the keys of docs/design.md §9.1–§9.2, built here by
hand, not by the project's scenario writer), read by the scenario loader and judged on the
model: the card walk on one node, the whole-cluster pick, the node score, the card checks'
verdicts, or `diagnose()`.

Encoding the upstream tables:

* Upstream memory in MiB × 1.024 (8000 → 8192, 1000 → 1024): every fraction, so every
  float32 score and every comparison, stays exactly what it was (`scaled`).
* A card's "used" state (Used, Usedmem, Usedcores) becomes that many running pods on it,
  sharing the memory and the cores as evenly as integers allow (`used`).
* Upstream card lists may repeat `Index: 0`; a card's place in the list is what HAMi's
  tie-break reads, so the model's index is the list position.
* Per-card requests (Memreq, Coresreq per card) become the model's totals over N cards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.core.diagnose import diagnose
from advisor.core.diagnosis import PodDiagnosis
from advisor.core.model import Cluster, Pod, queue_order
from advisor.core.occupancy import build_state
from advisor.core.profiles.base import pick
from advisor.core.profiles.hami import HamiProfile, node_scores
from advisor.core.state import CardState, Shape
from advisor.scenario import scenario_from_data

HAMI = "Project-HAMi/HAMi"
HAMI_TAG = "v2.10.0"  # commit 4707fb02
VOLCANO = "volcano-sh/volcano"
VOLCANO_TAG = "v1.15.0"  # commit 8fc394c1

Data = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Upstream:
    """One upstream test function at one release."""

    repo: str
    tag: str
    path: str
    test: str

    def cite(self, case: str = "") -> str:
        where = f"{self.repo}@{self.tag} {self.path} {self.test}"
        return f"{where}: {case!r}" if case else where


def scaled(mib: int) -> int:
    """Upstream MiB × 1.024, exactly (the tables' values are multiples of 125)."""
    assert mib * 1024 % 1000 == 0, f"{mib} MiB does not scale exactly"
    return mib * 1024 // 1000


def card(
    index: int,
    memory_mib: int,
    *,
    numa: int | None = None,
    max_vgpus: int | None = None,
    healthy: bool = True,
) -> Data:
    data: Data = {"index": index, "memory_mib": memory_mib}
    if numa is not None:
        data["numa"] = numa
    if max_vgpus is not None:
        data["max_vgpus"] = max_vgpus
    if not healthy:
        data["healthy"] = False
    return data


def node(name: str, *cards: Data) -> Data:
    return {"name": name, "cards": list(cards)}


def split(total: int, parts: int) -> list[int]:
    """`total` in `parts` integers as even as they go (the larger ones first)."""
    q, r = divmod(total, parts)
    return [q + 1] * r + [q] * (parts - r)


def used(node_name: str, index: int, count: int, memory_mib: int, cores: int = 0) -> list[Data]:
    """`count` running one-card pods on card `index` taking `memory_mib` and `cores` in all.
    Each takes at least 1 MiB: a HAMi or Volcano request without memory asks the whole card."""
    assert memory_mib >= count, "every running pod needs some memory"
    return [
        {
            "name": f"run/{node_name}-{index}-{i}",
            "node": node_name,
            "cards": [index],
            "request": {"gpus": 1, "memory_mib": mib, "core_percent": core},
        }
        for i, (mib, core) in enumerate(
            zip(split(memory_mib, count), split(cores, count), strict=True)
        )
    ]


def pod(
    name: str = "default/test",
    gpus: int = 1,
    *,
    card_mib: int = 0,
    card_core: int = 0,
    percent: int = 0,
    annotations: Mapping[str, str] | None = None,
) -> Data:
    """A Pending pod asking, per card, `card_mib` MiB (or `percent` % of each card; neither:
    the whole card) and `card_core` % core, on `gpus` cards."""
    request: Data = {"gpus": gpus}
    if card_mib:
        request["memory_mib"] = card_mib * gpus
    if card_core:
        request["core_percent"] = card_core * gpus
    if percent:
        request["memory_percent"] = percent
    data: Data = {"name": name, "request": request}
    if annotations:
        data["annotations"] = dict(annotations)
    return data


def scenario(
    profile: str,
    nodes: Sequence[Data],
    pods: Sequence[Data],
    *,
    node_policy: str | None = None,
    card_policy: str | None = None,
    max_vgpus: int | None = None,
    **settings: Any,
) -> Data:
    """Scenario data; policies and the vGPU limit default per profile when not given."""
    data: Data = {"scheduler": {"profile": profile, **settings}, "nodes": list(nodes)}
    policy = {k: v for k, v in (("node", node_policy), ("card", card_policy)) if v}
    if policy:
        data["policy"] = policy
    if max_vgpus is not None:
        data["max_vgpus_per_card"] = max_vgpus
    data["pods"] = list(pods)
    return data


def load(data: Data) -> Cluster:
    return scenario_from_data(data, "upstream.yaml")


def first_pending(cluster: Cluster, name: str | None = None) -> Pod:
    pending = queue_order(cluster.pending)
    return pending[0] if name is None else next(p for p in pending if p.name == name)


def pending_verdict(cluster: Cluster, name: str = "default/test") -> PodDiagnosis:
    """diagnose()'s verdict on one pod of the queue."""
    return next(d for d in diagnose(cluster).pods if d.pod.name == name)


def _indices(st: CardState, positions: Sequence[int]) -> list[int]:
    return [int(st.card_index[k]) for k in positions]


def walk_on(cluster: Cluster, node_name: str, pod_name: str | None = None) -> list[int] | None:
    """Card indices the profile gives the pod on `node_name` alone, in the order it takes
    them (what HAMi's calcScore lists per node); None when the node's GPU filter fails."""
    st = build_state(cluster)
    shape = Shape.of_pod(first_pending(cluster, pod_name))
    eligible = st.eligible(shape)
    i = st.node_index[node_name]
    if not st.gpu_fits(shape, eligible)[i]:
        return None
    policy = (cluster.policy.node, cluster.policy.card)
    return _indices(
        st, pick(st.profile, st, np.array([i], dtype=np.int64), shape, eligible, policy)
    )


def place(cluster: Cluster, pod_name: str | None = None) -> tuple[str, list[int], int] | None:
    """(node, card indices in pick order, nodes tied at random) for the pod, or None."""
    st = build_state(cluster)
    positions = st.place(
        Shape.of_pod(first_pending(cluster, pod_name)), cluster.policy.node, cluster.policy.card
    )
    if positions is None:
        return None
    return st.node_names[int(st.node_of[positions[0]])], _indices(st, positions), st.tied


def hami_node_score(cluster: Cluster, node_name: str) -> np.float32:
    """HAMi's ComputeDefaultScore of the node as the cluster stands (before the pod)."""
    st = build_state(cluster)
    return np.float32(node_scores(st, np.array([st.node_index[node_name]], dtype=np.int64))[0])


def fit_reason(cluster: Cluster, node_name: str, pod_name: str | None = None) -> str:
    """The model's card verdicts on one node in HAMi's GenReason form ("2/2 Reason, ..."):
    each card counted under the first check that rejects it, and, when some cards pass
    but fewer than the pod needs, AllocatedCardsInsufficientRequest with how many passed."""
    st = build_state(cluster)
    shape = Shape.of_pod(first_pending(cluster, pod_name))
    at = np.array(list(st.node_positions(st.node_index[node_name])), dtype=np.int64)
    checks = st.card_rejections(shape, at)
    counts: dict[str, int] = {}
    passed = 0
    for j in range(at.size):
        first = next((c for c, check in enumerate(checks) if check is not None and check[j]), None)
        if first is None:
            passed += 1
        else:
            reason = st.profile.reasons[1 + first]
            counts[reason] = counts.get(reason, 0) + 1
    if passed >= shape.gpus:
        return ""  # Fit stops at the N-th card that passes and reports nothing
    if passed:
        counts[st.profile.reasons[0]] = passed
    return ", ".join(sorted(f"{n}/{at.size} {reason}" for reason, n in counts.items()))


def hami_card_scores(cluster: Cluster, node_name: str, pod_name: str | None = None) -> list[float]:
    """HAMi's ComputeScore of each card of the node for the pod, in list order (float32)."""
    st = build_state(cluster)
    rules = st.profile
    assert isinstance(rules, HamiProfile)
    shape = Shape.of_pod(first_pending(cluster, pod_name))
    at = np.array(list(st.node_positions(st.node_index[node_name])), dtype=np.int64)
    scores = rules.card_scores(st, shape, at)
    assert scores.dtype == np.float32
    return [float(s) for s in scores]


def hami_source(path: str, test: str) -> Upstream:
    """A HAMi test table at the tag the hami profile follows."""
    return Upstream(HAMI, HAMI_TAG, path, test)
