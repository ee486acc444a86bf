"""Re-partition advice for MIG pods (docs/design.md §13): for each `mig-geometry` Pending
pod, the one card whose new layout makes room with the fewest pods moved, verified by the
same simulation as every verdict (`core.gang.judge`).

What applying it does decides what moves. nvidia-mig-parted (v0.15, pkg/mig/config/config.go,
`SetMigConfig`) leaves a device whose profile counts already match alone, and otherwise
clears every GPU instance on it (`ClearMigConfig`) before creating the new counts, trying
orderings of the profiles until NVML accepts one: it takes counts, not starts. So every pod
holding an instance of the re-partitioned card is drained first; those pods are the moves.

A candidate card (healthy, in MIG mode, on a `mixed` node: under `single` every card of the
node stays alike) keeps one instance for each held one, at its start, then takes the
instances the pod lacks on its node at the first starts its profile allows, then re-creates
the free instances it destroys where they still fit, so that no other pod loses room where
that can be helped. The layout is the one assumed; NVML chooses the real starts.

Verified when, on the scenario with that layout and the drained pods Pending again (same
request, priority and order), `judge` places the pod, every drained pod, and every pod it
placed before. Candidates are tried by (pods moved, node, card), at most `TRIES` per pod
and `BUDGET` in one run (each is a whole cycle; the pods past it are named unsearched);
the first verified is the advice. Each pod's re-partition is judged alone, on the scenario
as it is: two applied together are not verified together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from advisor.core.diagnosis import Diagnosis
from advisor.core.gang import judge
from advisor.core.mig import MigInstance, MigTable, fits_in, slices_of, table_of
from advisor.core.model import Card, Cluster, Node, Pod
from advisor.errors import known

TRIES = 8  # candidate layouts simulated per pod: each is a whole cycle
BUDGET = 32  # and in one run, over every pod


@dataclass(frozen=True, slots=True)
class Repartition:
    """One pod's verified re-partition: the card, its layout before and after (instances as
    the advisor assumes them), the pods to drain first, and the node's MIG cards' profile
    counts after it (`devices`: card index, then (profile, count) by profile name)."""

    pod: str
    node: str
    card: int
    before: tuple[MigInstance, ...]
    after: tuple[MigInstance, ...]
    drain: tuple[str, ...]
    devices: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]

    @property
    def config_name(self) -> str:
        """The mig-configs entry's name: the node's, in the characters a label value takes
        (mig-manager selects a configuration by the node label `nvidia.com/mig.config`)."""
        return "xgpu-" + re.sub(r"[^A-Za-z0-9_.-]", "-", self.node)[:58]

    @property
    def summary(self) -> str:
        """The words every output uses for it."""
        layout = ", ".join(f"{m.profile}@{m.start}" for m in self.after)
        drain = ", ".join(self.drain) if self.drain else "none"
        return (
            f"re-partition {self.node} card {self.card} to {layout}; drain first: {drain} "
            f"(nvidia-mig-parted configuration {self.config_name})"
        )


def _counts(instances: tuple[MigInstance, ...]) -> tuple[tuple[str, int], ...]:
    counts: dict[str, int] = {}
    for m in instances:
        counts[m.profile] = counts.get(m.profile, 0) + 1
    return tuple(sorted(counts.items()))


def _layout(
    table: MigTable, held: list[MigInstance], free: list[MigInstance], profile: str, wanted: int
) -> tuple[MigInstance, ...] | None:
    """The card's new layout: the held instances where they are, `wanted` of `profile` at
    the first starts left, then the destroyed free ones where they fit; None when the card
    cannot hold `wanted` more."""
    taken = 0
    count: dict[str, int] = {}
    out: list[MigInstance] = []

    def put(name: str, start: int) -> None:
        nonlocal taken
        found = known(table.profile(name), f"MIG profile {name}")
        taken |= slices_of(found, start)
        count[name] = count.get(name, 0) + 1
        out.append(MigInstance(name, start))

    for m in held:
        put(m.profile, m.start)
    target = table.profile(profile)
    if target is None:
        return None
    for _ in range(wanted):
        start = fits_in(target, taken, count.get(profile, 0))
        if start is None:
            return None
        put(profile, start)
    for m in free:  # where it was if still free, else its first start left
        shape = table.profile(m.profile)
        if shape is None or count.get(m.profile, 0) >= shape.most:
            continue
        if not taken & slices_of(shape, m.start):
            put(m.profile, m.start)
        elif (start := fits_in(shape, taken, count.get(m.profile, 0))) is not None:
            put(m.profile, start)
    return tuple(sorted(out, key=lambda m: m.start))


@dataclass(frozen=True, slots=True)
class _Candidate:
    node: Node
    card: Card
    after: tuple[MigInstance, ...]
    drain: tuple[str, ...]


def _holders(cluster: Cluster, node: str, card: int) -> dict[int, str]:
    """The card's held instances' starts and the bound pods holding them."""
    out: dict[int, str] = {}
    for pod in cluster.running:
        if pod.placement is not None and pod.placement.node == node:
            for index, start in pod.mig_instances:
                if index == card:
                    out[start] = pod.name
    return out


def _candidates(cluster: Cluster, pod: Pod) -> list[_Candidate]:
    profile, gpus = pod.request.mig_profile, pod.request.gpus
    found: list[_Candidate] = []
    for node in cluster.nodes:
        if node.mig_strategy != "mixed":
            continue
        holders_of = {c.index: _holders(cluster, node.name, c.index) for c in node.cards}
        for card in node.cards:
            table = table_of(card.model)
            if card.mig is None or table is None or not card.healthy:
                continue
            # the free instances of the profile on the node's other cards count toward it
            elsewhere = sum(
                1
                for c in node.cards
                if c.index != card.index and c.mig is not None and c.healthy
                for m in c.mig
                if m.profile == profile and m.start not in holders_of[c.index]
            )
            holders = holders_of[card.index]
            held = [m for m in card.mig if m.start in holders]
            free = [m for m in card.mig if m.start not in holders]
            after = _layout(table, held, free, profile, max(gpus - elsewhere, 1))
            if after is not None:
                drain = tuple(sorted(set(holders.values())))
                found.append(_Candidate(node, card, after, drain))
    found.sort(key=lambda c: (len(c.drain), c.node.name, c.card.index))
    return found


def _applied(cluster: Cluster, c: _Candidate) -> Cluster:
    """The scenario with the candidate's layout, its drained pods Pending again."""
    card = replace(c.card, mig=c.after)
    cards = tuple(card if k.index == c.card.index else k for k in c.node.cards)
    nodes = tuple(replace(n, cards=cards) if n.name == c.node.name else n for n in cluster.nodes)
    drained = set(c.drain)
    pods = tuple(
        replace(p, placement=None, mig_instances=()) if p.name in drained else p
        for p in cluster.pods
    )
    return replace(cluster, nodes=nodes, pods=pods)


def _verified(cluster: Cluster, pod: str, placed: frozenset[str], c: _Candidate) -> bool:
    verdicts = {d.pod.name: d.cause for d in judge(_applied(cluster, c), node_detail_limit=0).pods}
    must = {pod, *c.drain, *placed}
    return all(verdicts.get(name) == "schedulable" for name in must)


@dataclass(frozen=True, slots=True)
class Found:
    """A run's re-partitions, and the `mig-geometry` pods the budget left unsearched."""

    repartitions: tuple[Repartition, ...]
    unsearched: tuple[str, ...]


def search(cluster: Cluster, diagnosis: Diagnosis, budget: int = BUDGET) -> Found:
    """The verified re-partition of each `mig-geometry` pod of `diagnosis` (`judge`'s), in
    its order; a pod with none verified among its first `TRIES` candidates has none, and
    one reached after `budget` simulations is unsearched."""
    placed = frozenset(d.pod.name for d in diagnosis.pods if d.cause == "schedulable")
    out: list[Repartition] = []
    unsearched: list[str] = []
    for verdict in diagnosis.pods:
        if verdict.cause != "mig-geometry":
            continue
        name = verdict.pod.name
        if budget <= 0:
            unsearched.append(name)
            continue
        for c in _candidates(cluster, verdict.pod)[: min(TRIES, budget)]:
            budget -= 1
            if _verified(cluster, name, placed, c):
                out.append(_repartition(name, c))
                break
    return Found(tuple(out), tuple(unsearched))


def repartitions(cluster: Cluster, diagnosis: Diagnosis) -> tuple[Repartition, ...]:
    """`search`'s re-partitions."""
    return search(cluster, diagnosis).repartitions


def _repartition(pod: str, c: _Candidate) -> Repartition:
    devices = tuple(
        (k.index, _counts(c.after if k.index == c.card.index else k.mig))
        for k in c.node.cards
        if k.mig is not None
    )
    before = tuple(sorted(c.card.mig or (), key=lambda m: m.start))
    return Repartition(pod, c.node.name, c.card.index, before, c.after, c.drain, devices)


def mig_parted_yaml(r: Repartition) -> str:
    """The nvidia-mig-parted configuration (its `version: v1` file, one `mig-configs` entry
    naming each MIG card of the node: the ones whose counts stay are left alone by it)."""
    lines = ["version: v1", "mig-configs:", f"  {r.config_name}:"]
    for index, counts in r.devices:
        lines += [f"    - devices: [{index}]", "      mig-enabled: true"]
        if not counts:
            lines.append("      mig-devices: {}")
            continue
        lines.append("      mig-devices:")
        lines += [f'        "{profile}": {n}' for profile, n in counts]
    return "\n".join(lines) + "\n"
