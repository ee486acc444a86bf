"""MIG pods in the simulated cycle (docs/design.md §13.2): a Pending pod asking
`nvidia.com/mig-<profile>: N` fits a node with N free instances of that profile.

The device plugin advertises each free GPU instance as one unit of its resource (mixed
strategy: `nvidia.com/mig-<profile>`; single: `nvidia.com/gpu`, every card of the node
partitioned alike), so to kube-scheduler a MIG pod is an extended-resource request: a node
short of it is "Insufficient nvidia.com/mig-<profile>" (NodeResourcesFit's words). The
node's other filters (§9.1) judge it as they judge a vGPU pod.

Why it waits:
- `node-resources`: some node has the instances but lacks cpu, memory or a pod slot;
- `mig-geometry`: no free instance, but some MIG card's unoccupied slices (held by no bound
  pod, once its free instances are destroyed) would hold the profile at a start its table
  allows (`core.mig`): a re-partition makes room (design §13.2 called this cause
  `fragmentation`; issue #26 names it `mig-geometry`, kept apart from the vGPU meaning);
- `capacity`: otherwise.

Not modelled: which free instance the device plugin hands out (the first by card, then
slice, here), re-partitioning advice (`core.mig_partition`), Volcano's preemption of MIG
pods (kube-scheduler's: `core.preemption.kube`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from advisor.core.diagnose_text import resources_text
from advisor.core.diagnosis import Cause, PodDiagnosis
from advisor.core.mig import (
    SLICES,
    MigTable,
    mig_resource,
    room_beside,
    table_of,
)
from advisor.core.model import Cluster, Placement, Pod, PolicyName
from advisor.core.nodefilters import fit_error
from advisor.core.state import CardState, IntArray, Shape
from advisor.errors import known

REASON = "mig-profile"


@dataclass(slots=True)
class _Instance:
    card: int  # the card's index
    profile: str
    start: int
    holder: str | None = None  # the pod that holds it


@dataclass(slots=True)
class _Card:
    node: int
    index: int
    table: MigTable
    healthy: bool
    instances: list[_Instance]
    memory_mib: int = 0


def is_mig(pod: Pod) -> bool:
    return bool(pod.request.mig_profile)


def resource_name(node_strategy: str, profile: str) -> str:
    return "nvidia.com/gpu" if node_strategy == "single" else mig_resource(profile)


class MigBook:
    """Every MIG card's instances, and which pod holds each; private to one cycle."""

    def __init__(self, cluster: Cluster, state: CardState) -> None:
        self.state = state
        self.strategy = [n.mig_strategy for n in cluster.nodes]
        self.cards: list[_Card] = []
        for i, node in enumerate(cluster.nodes):
            for card in node.mig_cards():
                table = known(table_of(card.model), "a MIG card's profile table")
                instances = [_Instance(card.index, m.profile, m.start) for m in card.mig or ()]
                self.cards.append(
                    _Card(i, card.index, table, card.healthy, instances, card.memory_mib)
                )
        self._index()
        # Under `single` the node's one profile: what nvidia.com/gpu counts there.
        self.single = {
            i: p for i, n in enumerate(cluster.nodes) if (p := n.single_profile()) is not None
        }
        for pod in cluster.running:
            if is_mig(pod) and pod.placement is not None:
                self._hold(state.node_index[pod.placement.node], pod.mig_instances, pod.name)

    @property
    def empty(self) -> bool:
        return not self.cards

    def _offers(self, node: int, profile: str) -> bool:
        """Whether the node's device plugin could advertise `profile` at all."""
        strategy = self.strategy[node]
        return strategy == "mixed" or (
            strategy == "single" and self.single.get(node, profile) == profile
        )

    def _index(self) -> None:
        """Each node's cards, found without a pass over every card; no room kept yet."""
        self._rooms: dict[str, dict[tuple[int, int], int]] = {}
        self._on: dict[int, list[_Card]] = {}
        for c in self.cards:
            self._on.setdefault(c.node, []).append(c)

    def _hold(self, node: int, held: tuple[tuple[int, int], ...], holder: str | None) -> None:
        self._changed(node)
        for index, start in held:
            for c in self._on.get(node, ()):
                if c.index == index:
                    for inst in c.instances:
                        if inst.start == start:
                            inst.holder = holder

    def offered(self, profile: str) -> list[list[_Instance]]:
        """Per node, its instances of `profile` on healthy cards, held or free, by card then
        slice: the device plugin's allocatable `nvidia.com/mig-<profile>` (or, single,
        `nvidia.com/gpu`) of the node."""
        out: list[list[_Instance]] = [[] for _ in self.strategy]
        for c in self.cards:
            if c.healthy and self._offers(c.node, profile):
                out[c.node].extend(i for i in c.instances if i.profile == profile)
        return out

    def free(self, profile: str) -> list[list[_Instance]]:
        """Per node, the free instances of `profile` on healthy cards a pod may take, by
        card then slice. The kubelet's allocatable counts healthy instances only, but a pod
        holding one on an unhealthy card still counts in the node's requested
        (fitsRequest: allocatable less every bound pod's request), so each such instance
        takes one free healthy instance out of reach: the last ones, by card then slice."""
        lost = self.held_unhealthy(profile)
        out = []
        for node, offered in enumerate(self.offered(profile)):
            free = [i for i in offered if i.holder is None]
            out.append(free[: max(0, len(free) - len(lost[node]))])
        return out

    def held_unhealthy(self, profile: str) -> list[list[str]]:
        """Per node offering `profile`, the holder of each of its instances held on an
        unhealthy card: requested, though not allocatable."""
        out: list[list[str]] = [[] for _ in self.strategy]
        for c in self.cards:
            if not c.healthy and self._offers(c.node, profile):
                out[c.node].extend(
                    i.holder for i in c.instances if i.profile == profile and i.holder is not None
                )
        return out

    def resource(self, node: int, profile: str) -> str:
        """The resource the node's device plugin names `profile`'s instances by."""
        return resource_name(self.strategy[node], profile)

    def could_hold(self, profile: str) -> list[int]:
        """Per node, how many instances of `profile` its healthy MIG cards would hold were
        every free instance destroyed: the unoccupied slices, each card filled from its
        first allowed start (the starts of each profile tile the card, so this is the most),
        less those held on its unhealthy cards (`free`)."""
        out = [-len(h) for h in self.held_unhealthy(profile)]  # requested, as `free` counts
        rooms = self._rooms.setdefault(profile, {})
        for c in self.cards:
            room = rooms.get((c.node, c.index))
            if room is None:
                room = rooms[(c.node, c.index)] = self._room(c, profile)
            out[c.node] += room
        return out

    def _room(self, c: _Card, profile: str) -> int:
        """How many of `profile` the card would hold, its held instances kept (`could_hold`;
        kept per card until a pod comes to or leaves its node: `_changed`)."""
        wanted = c.table.profile(profile)
        if wanted is None or not c.healthy or not self._offers(c.node, profile):
            return 0
        held = ((i.profile, i.start) for i in c.instances if i.holder is not None)
        return room_beside(c.table, held, wanted)

    def _changed(self, node: int) -> None:
        """A pod came to or left `node`: its cards' rooms are worked out again."""
        for rooms in self._rooms.values():
            for c in self._on.get(node, ()):
                rooms.pop((node, c.index), None)

    def most_ever(self, profile: str) -> list[int]:
        """Per node, instances of `profile` its MIG cards hold at most, empty and healthy."""
        out = [0] * len(self.strategy)
        for c in self.cards:
            wanted = c.table.profile(profile)
            if wanted is not None and self._offers(c.node, profile):
                out[c.node] += wanted.most
        return out

    def occupancy(self, only: int | None = None) -> dict[int, tuple[float, int]]:
        """Per node with MIG cards (`only`: that node alone): (the memory of the slices its
        held instances take, its MIG cards' memory), each card's slices an eighth of its
        memory: what scale-down counts a MIG card's use by, beside the vGPU cards'."""
        out: dict[int, tuple[float, int]] = {}
        for c in self.cards:
            if only is not None and c.node != only:
                continue
            held = 0
            for i in c.instances:
                known = c.table.profile(i.profile)
                if i.holder is not None and known is not None:
                    held += known.span
            used, total = out.get(c.node, (0.0, 0))
            out[c.node] = (used + c.memory_mib * held / SLICES, total + c.memory_mib)
        return out

    # -- the cycle's steps ---------------------------------------------------------------

    def fails_alone(self, pod: Pod) -> PodDiagnosis | None:
        """`unsatisfiable` when no node the pod may use could ever offer its instances."""
        profile, gpus = pod.request.mig_profile, pod.request.gpus
        s = self.state
        shape = Shape.of_pod(pod)
        allowed = s.static_ok(shape.constraints)
        if not allowed.any():
            message = fit_error(
                len(s.node_names),
                s.static_counts(shape.constraints).items(),
                s.profile.session.volcano,
            )
            return PodDiagnosis(pod, "unsatisfiable", message)
        most = np.array(self.most_ever(profile), dtype=np.int64)
        if (allowed & (most >= gpus)).any():
            return None
        return PodDiagnosis(
            pod,
            "unsatisfiable",
            f"no node the pod may use has MIG cards that hold {gpus} {profile} instances, "
            f"even empty (a card's model decides its profiles)",
        )

    def visit(self, pod: Pod, node_policy: PolicyName, limit: int | None) -> PodDiagnosis:
        profile, gpus = pod.request.mig_profile, pod.request.gpus
        s = self.state
        shape = Shape.of_pod(pod)
        n_nodes = len(s.node_names)
        static_ok = s.static_ok(shape.constraints)
        short = s.resource_shortfalls(shape)
        roomy = ~short.any(axis=1)
        free = self.free(profile)
        count = np.array([len(f) for f in free], dtype=np.int64)
        has = count >= gpus
        fits = np.flatnonzero(static_ok & roomy & has)
        if fits.size:
            placement, taken = self._bind(pod, fits, count, free, node_policy)
            where = ", ".join(f"card {i.card} slice {i.start}" for i in taken)
            return PodDiagnosis(
                pod, "schedulable", f"fits on {placement.node} ({profile} at {where})", placement
            )
        reasons: dict[int, tuple[str, ...]] = {}
        counts: dict[str, int] = {}
        for node in range(n_nodes):
            found = self._rejection(node, shape, short[node], bool(count[node] < gpus), profile)
            for word in found:
                counts[word] = counts.get(word, 0) + 1
            detail = f"{REASON}: {int(count[node])} free {profile} instances, {gpus} needed"
            reasons[node] = tuple(
                detail if w.startswith("Insufficient nvidia.com/") else w for w in found
            )
        reason_counts = tuple(sorted(counts.items(), key=lambda rc: -rc[1]))
        volcano = s.profile.session.volcano
        summary = fit_error(n_nodes, reason_counts, volcano)
        order = sorted(range(n_nodes), key=lambda i: (-int(count[i]), int(s.name_rank[i])))
        listed = order if limit is None else order[:limit]
        verdict = PodDiagnosis(
            pod,
            "capacity",
            "",
            node_reasons=tuple((s.node_names[i], reasons[i]) for i in listed),
            nodes_omitted=n_nodes - len(listed),
            reason_counts=reason_counts,
            nodes_total=n_nodes,
            volcano=volcano,
        )
        starved = np.flatnonzero(static_ok & ~roomy & has)
        if starved.size:
            first = int(starved[np.argmin(s.name_rank[starved])])
            lacking = ", ".join(s.fit.words(short[first]))
            return _with(
                verdict,
                "node-resources",
                f"{summary} The MIG instances are free on {s.node_names[first]}, but {lacking} "
                f"there for {resources_text(shape)}: free or add cpu and memory, not GPUs",
            )
        room = np.array(self.could_hold(profile), dtype=np.int64)
        cut = np.flatnonzero(static_ok & roomy & (room >= gpus))
        if cut.size:
            first = int(cut[np.argmin(s.name_rank[cut])])
            return _with(
                verdict,
                "mig-geometry",
                f"{summary} No free {profile} instance, but {s.node_names[first]}'s MIG cards "
                f"have unoccupied slices for {int(room[first])} {profile} if re-partitioned "
                "(their free instances destroyed)",
            )
        return _with(
            verdict,
            "capacity",
            f"{summary} No node has {gpus} free {profile} instances, and no MIG card's "
            f"unoccupied slices would hold {gpus} {profile} on one node, even re-partitioned",
        )

    def place(self, pod: Pod, node_policy: PolicyName) -> Placement | None:
        """`visit`'s placement without its reasons (what scaling's queue checks ask): the
        same fit and pick, None where the pod finds no node."""
        s = self.state
        shape = Shape.of_pod(pod)
        free = self.free(pod.request.mig_profile)
        count = np.array([len(f) for f in free], dtype=np.int64)
        roomy = ~s.resource_shortfalls(shape).any(axis=1)
        fits = np.flatnonzero(s.static_ok(shape.constraints) & roomy & (count >= pod.request.gpus))
        if not fits.size:
            return None
        return self._bind(pod, fits, count, free, node_policy)[0]

    def _bind(
        self,
        pod: Pod,
        fits: IntArray,
        count: IntArray,
        free: list[list[_Instance]],
        node_policy: PolicyName,
    ) -> tuple[Placement, list[_Instance]]:
        """Bind the pod on the best of the nodes that fit: binpack, the node with the fewest
        free instances of the profile left; spread, the most; ties by name."""
        s = self.state
        sign = 1 if node_policy == "binpack" else -1
        best = int(fits[np.lexsort((s.name_rank[fits], sign * count[fits]))[0]])
        return self.bind_on(pod, best, free[best])

    def bind_on(
        self, pod: Pod, node: int, free: list[_Instance] | None = None
    ) -> tuple[Placement, list[_Instance]]:
        """`pod` bound on node `node` as the cycle binds it: the node's first free instances
        of its profile (`free`, where the caller has them) held from now on, its cpu and
        memory counted there; its placement and the instances taken."""
        s = self.state
        if free is None:
            free = self.free(pod.request.mig_profile)[node]
        taken = free[: pod.request.gpus]
        self._changed(node)
        for inst in taken:
            inst.holder = pod.name
        s.add_requested(node, Shape.of_pod(pod).demand)
        return Placement(s.node_names[node], tuple(i.card for i in taken)), taken

    def held_by(self, pod: str) -> tuple[tuple[int, int], ...]:
        """The (card, start) of each instance `pod` holds, by card then slice."""
        return tuple((i.card, i.start) for c in self.cards for i in c.instances if i.holder == pod)

    def hold(self, pod: Pod, node: str, held: tuple[tuple[int, int], ...]) -> None:
        """`pod` arrives on `node` holding `held` (its cpu and memory too)."""
        self._hold(self.state.node_index[node], held, pod.name)
        self.state.add_requested(self.state.node_index[node], Shape.of_pod(pod).demand)

    def copy(self, state: CardState) -> MigBook:
        """This book over `state` (a copy of its own): the instances and holders copied."""
        clone = object.__new__(MigBook)
        clone.state = state
        clone.strategy = self.strategy
        clone.single = self.single
        clone.cards = [replace(c, instances=[replace(i) for i in c.instances]) for c in self.cards]
        clone._index()
        return clone

    def _rejection(
        self, node: int, shape: Shape, short: Sequence[bool], lacking: bool, profile: str
    ) -> tuple[str, ...]:
        """The node's words in the FitError: the instances are an extended resource, so
        the session's resource check names them after cpu, memory and the pod slot
        (kube-scheduler's fitsRequest: every resource short, after the static filters;
        Volcano's LessEqualWithResourcesName: the first short only, before them)."""
        s = self.state
        static = s.static_rejections(shape.constraints).get(node, ())
        words = s.fit.named(short)
        if lacking:
            words += (f"Insufficient {resource_name(self.strategy[node], profile)}",)
        if s.fit.first_only:
            words = words[:1]
        return (words or static) if s.fit.before_static else (static or words)

    def release(self, pod: Pod, placement: Placement) -> None:
        """Undo a placement made in this cycle (a gang rolled back)."""
        node = self.state.node_index[placement.node]
        self._changed(node)
        for c in self._on.get(node, ()):
            for inst in c.instances:
                if inst.holder == pod.name:
                    inst.holder = None
        self.state.add_requested(node, Shape.of_pod(pod).demand, -1)


def _with(verdict: PodDiagnosis, cause: Cause, message: str) -> PodDiagnosis:
    return replace(verdict, cause=cause, message=message)
