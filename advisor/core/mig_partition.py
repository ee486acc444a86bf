"""Re-partition advice for MIG pods (docs/design.md §13): for each `mig-geometry` Pending
pod, the cards of one node whose new layouts make room with the fewest pods moved, verified
by the same simulation as every verdict (`core.gang.judge`).

What applying it does decides what moves. nvidia-mig-parted (v0.15, pkg/mig/config/config.go,
`SetMigConfig`) leaves a device whose profile counts already match alone, and otherwise
clears every GPU instance on it (`ClearMigConfig`) before creating the new counts, trying
orderings of the profiles until NVML accepts one: it takes counts, not starts. So every pod
holding an instance of a re-partitioned card is drained first; those pods are the moves.

A candidate is a set of a node's healthy MIG cards that offer the profile (every card of a
`mixed` node; under `single` the node's one profile only, so its cards stay alike, as the
device plugin requires: NVIDIA/k8s-device-plugin internal/rm/device_map.go,
`assertAllMigDevicesAreValid` with `uniform`), no card of it needless: the free instances
of the profile on the node's other cards and the cards' room re-partitioned reach what the
pod asks (with what the pods placed ahead of it in the cycle took on the node, and what the
`mig-geometry` pods of its profile ahead of it ask: the room made goes to them first), and
without any one of its cards they would not. Each card keeps one instance for
each held one, at its start, then takes its share of the instances the pod lacks at the
first starts its profile allows (the cards by index, each as many as it holds), then
re-creates the free instances it destroys where they still fit, so that no other pod loses
room where that can be helped. The layout is the one assumed; NVML chooses the real starts.

Verified when, on the scenario with those layouts and the drained pods Pending again (same
request, priority and order), `judge` places the pod, every drained pod, and every pod it
placed before. Candidates are tried by (pods moved, cards, node, the cards' indexes), at
most `TRIES` per pod and `BUDGET` in one run (each is a whole cycle; the pods past it are
named unsearched); the first verified is the advice. Each pod's re-partition is judged
alone, on the scenario as it is: two applied together are not verified together.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import combinations, islice
from types import MappingProxyType

from advisor.core.diagnosis import Diagnosis
from advisor.core.gang import judge
from advisor.core.mig import MigInstance, MigTable, fits_in, room_beside, slices_of, table_of
from advisor.core.model import Card, Cluster, Node, Pod
from advisor.errors import known

MIG_CONFIG_LABEL = "nvidia.com/mig.config"  # the configuration mig-manager applies to a node
TRIES = 8  # candidate layouts simulated per pod: each is a whole cycle
BUDGET = 32  # and in one run, over every pod
SETS = 256  # sets of cards looked at per node and pod (a node of 16 cards has 65,535)


@dataclass(frozen=True, slots=True)
class CardCut:
    """One re-partitioned card: its layout before and after (instances as the advisor
    assumes them, by start)."""

    card: int
    before: tuple[MigInstance, ...]
    after: tuple[MigInstance, ...]

    @property
    def words(self) -> str:
        return f"card {self.card} to " + ", ".join(f"{m.profile}@{m.start}" for m in self.after)


@dataclass(frozen=True, slots=True)
class Repartition:
    """One pod's verified re-partition: its node's cards re-partitioned (by index), the pods
    to drain first, the node's MIG cards' profile counts after it (`devices`: card index,
    then (profile, count) by profile name), and the configuration the node's
    `nvidia.com/mig.config` label names now (None: no label), which this one replaces."""

    pod: str
    node: str
    cuts: tuple[CardCut, ...]
    drain: tuple[str, ...]
    devices: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]
    current: str | None = None

    @property
    def config_name(self) -> str:
        """The mig-configs entry's name: the node's, in the characters a label value takes
        (mig-manager selects a configuration by the node label `nvidia.com/mig.config`)."""
        return "xgpu-" + re.sub(r"[^A-Za-z0-9_.-]", "-", self.node)[:58]

    @property
    def summary(self) -> str:
        """The words every output uses for it."""
        cards = " and ".join(cut.words for cut in self.cuts)
        drain = ", ".join(self.drain) if self.drain else "none"
        instead = f", in place of {self.current}" if self.current else ""
        return (
            f"re-partition {self.node} {cards}; drain first: {drain} "
            f"(nvidia-mig-parted configuration {self.config_name}{instead})"
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
class _Part:
    """A card that could be re-partitioned for the profile: its held and free instances,
    the pods holding them, the profile's free instances on it now and the most of it the
    card would offer free re-partitioned (its held ones kept)."""

    card: Card
    table: MigTable
    held: list[MigInstance]
    free: list[MigInstance]
    holders: frozenset[str]
    offered: int
    room: int


def _part(card: Card, holders: dict[int, str], profile: str) -> _Part | None:
    table = table_of(card.model)
    target = table.profile(profile) if table is not None else None
    if card.mig is None or table is None or target is None or not card.healthy:
        return None
    held = [m for m in card.mig if m.start in holders]
    free = [m for m in card.mig if m.start not in holders]
    room = room_beside(table, ((m.profile, m.start) for m in held), target)
    offered = sum(m.profile == profile for m in free)
    return _Part(card, table, held, free, frozenset(holders.values()), offered, room)


@dataclass(frozen=True, slots=True)
class _Candidate:
    node: Node
    cuts: tuple[CardCut, ...]
    drain: tuple[str, ...]


Holders = dict[str, dict[int, dict[int, str]]]  # node -> card -> start -> the pod holding it


def _holders(cluster: Cluster) -> Holders:
    """Per node and card, its held instances' starts and the bound pods holding them."""
    out: Holders = {}
    for pod in cluster.running:
        if pod.placement is not None and pod.mig_instances:
            cards = out.setdefault(pod.placement.node, {})
            for index, start in pod.mig_instances:
                cards.setdefault(index, {})[start] = pod.name
    return out


def _offers(node: Node, profile: str) -> bool:
    """Whether the node's device plugin advertises the profile (single: its cards' one)."""
    if node.mig_strategy == "mixed":
        return True
    if node.mig_strategy != "single":
        return False
    return any(m.profile == profile for c in node.cards for m in c.mig or ())


def _node_candidates(
    node: Node, holders: dict[int, dict[int, str]], profile: str, gpus: int
) -> list[_Candidate]:
    parts = [part for c in node.cards if (part := _part(c, holders.get(c.index, {}), profile))]
    offered = sum(p.offered for p in parts)
    # a card that would offer no more than it does now is never worth clearing
    useful = [p for p in parts if p.room > p.offered]

    def lacking(chosen: tuple[_Part, ...]) -> int:
        """What the cards chosen must hold: the pod's ask less the others' free ones."""
        return max(gpus - (offered - sum(p.offered for p in chosen)), 1)

    def enough(chosen: tuple[_Part, ...]) -> bool:
        return sum(p.room for p in chosen) >= lacking(chosen)

    found: list[_Candidate] = []
    # a set is needless past `gpus` cards: each adds room for one at least, and without any
    # one of them the rest would still hold what is lacking
    sizes = range(1, min(len(useful), gpus) + 1)
    sets = (s for size in sizes for s in combinations(useful, size))
    for chosen in islice(sets, SETS):
        if not enough(chosen) or any(
            enough(tuple(q for q in chosen if q is not p)) for p in chosen
        ):
            continue  # too little room, or a card that could stay as it is
        needed = lacking(chosen)
        cuts: list[CardCut] = []
        for p in chosen:  # by card index: each takes as many as it holds
            wanted = min(p.room, needed)
            after = _layout(p.table, p.held, p.free, profile, wanted) if wanted else None
            if after is None:
                break
            needed -= wanted
            cuts.append(CardCut(p.card.index, tuple(sorted(p.card.mig or (), key=_start)), after))
        else:
            drain = tuple(sorted(set().union(*(p.holders for p in chosen))))
            found.append(_Candidate(node, tuple(cuts), drain))
    return found


def _start(m: MigInstance) -> int:
    return m.start


def _candidates(
    cluster: Cluster,
    pod: Pod,
    before: Mapping[tuple[str, str], int] = MappingProxyType({}),
    holders: Holders | None = None,
    waiting: int = 0,
) -> list[_Candidate]:
    """`pod`'s candidates; `before`: per (node, profile), the instances the pods placed
    ahead of it in the cycle took there, which a node's cards must hold too; `holders`:
    `_holders(cluster)`, when kept; `waiting`: the instances of its profile that the
    `mig-geometry` pods ahead of it ask, which the room a re-partition makes goes to first
    (they found none anywhere else)."""
    profile = pod.request.mig_profile
    held = _holders(cluster) if holders is None else holders
    found: list[_Candidate] = []
    for node in cluster.nodes:
        if any(c.mig is not None for c in node.cards) and _offers(node, profile):
            gpus = pod.request.gpus + before.get((node.name, profile), 0) + waiting
            found += _node_candidates(node, held.get(node.name, {}), profile, gpus)
    found.sort(key=lambda c: (len(c.drain), len(c.cuts), c.node.name, [cut.card for cut in c.cuts]))
    return found


def _applied(cluster: Cluster, c: _Candidate) -> Cluster:
    """The scenario with the candidate's layouts, its drained pods Pending again."""
    after = {cut.card: cut.after for cut in c.cuts}
    cards = tuple(replace(k, mig=after[k.index]) if k.index in after else k for k in c.node.cards)
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
    before: Counter[tuple[str, str]] = Counter()
    waiting: Counter[str] = Counter()
    holders = _holders(cluster)
    for verdict in diagnosis.pods:
        request, where = verdict.pod.request, verdict.placement
        if verdict.cause == "schedulable" and request.mig_profile and where is not None:
            before[where.node, request.mig_profile] += request.gpus
        if verdict.cause != "mig-geometry":
            continue
        name, ahead = verdict.pod.name, waiting[request.mig_profile]
        waiting[request.mig_profile] += request.gpus
        if budget <= 0:
            unsearched.append(name)
            continue
        found = _candidates(cluster, verdict.pod, before, holders, ahead)
        for c in found[: min(TRIES, budget)]:
            budget -= 1
            if _verified(cluster, name, placed, c):
                out.append(_repartition(name, c))
                break
    return Found(tuple(out), tuple(unsearched))


def repartitions(cluster: Cluster, diagnosis: Diagnosis) -> tuple[Repartition, ...]:
    """`search`'s re-partitions."""
    return search(cluster, diagnosis).repartitions


def _repartition(pod: str, c: _Candidate) -> Repartition:
    after = {cut.card: cut.after for cut in c.cuts}
    devices = tuple(
        (k.index, _counts(after.get(k.index, k.mig))) for k in c.node.cards if k.mig is not None
    )
    current = c.node.labels.get(MIG_CONFIG_LABEL)
    return Repartition(pod, c.node.name, c.cuts, c.drain, devices, current)


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
