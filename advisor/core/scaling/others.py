"""The other pods of the nodes scale-down removes: do their cpu, memory and pod slots fit?

A node's other pods (`Node.other_pods`: no GPU, or vGPUs not modelled) move when the node
goes, and the cluster-autoscaler removes a node only when every pod it would move finds a
node with room. Where they land is not the scheduler core's business (they ask no GPU), so
this is not the scheduler's choice but a first-fit, enough to tell whether they fit at all:
nodes that no later removal is about to consider first, then by name. First-fit can miss a
packing that fits, so it errs towards keeping a node.

A node admits one as kube-scheduler's static filters say (cordon, nodeSelector and required
affinity, taints) when its constraints are known (`OtherPod.constraints`: the Kubernetes
source reads them). When they are not (a scenario without them), a node admits it when it
is not cordoned and its NoSchedule / NoExecute taints are among those of the node the pod
ran on (which it tolerated). The model holds the GPU nodes only, so a pod that could go to
a node outside it is still judged on these.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from advisor.core.model import Mode, Node, OtherPod
from advisor.core.nodefilters import Taint
from advisor.core.state import CardState, Shape


@dataclass(frozen=True, slots=True)
class Leaving:
    """An other pod on the move, and the taints it is known to tolerate."""

    pod: OtherPod
    tolerates: frozenset[Taint]


def other_shape(pod: OtherPod) -> Shape:
    """An other pod as the node filters see it: no GPU, its cpu and memory, one pod slot."""
    return Shape(0, 0, 0, int(Mode.MEMORY), pod.resources)


def _filtering(taints: Sequence[Taint]) -> frozenset[Taint]:
    return frozenset(t for t in taints if t.effect != "PreferNoSchedule")


class OtherPods:
    """Each node's other pods as the removals so far left them: its own (`Node.other_pods`,
    None when not known) and those earlier removals moved onto it."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = tuple(nodes)
        self.index = {n.name: i for i, n in enumerate(self.nodes)}
        self.arrived: dict[str, list[Leaving]] = {}
        self.by_name: list[int] | None = None  # node indices by name, once needed

    def own(self, name: str) -> tuple[OtherPod, ...] | None:
        return self.nodes[self.index[name]].other_pods

    def leaving(self, name: str) -> list[Leaving]:
        """The pods that removing `name` would move: its own, then those moved onto it."""
        node = self.nodes[self.index[name]]
        tolerated = _filtering(node.taints)
        return [Leaving(p, tolerated) for p in node.other_pods or ()] + self.arrived.get(name, [])

    def names(self, name: str) -> tuple[str, ...] | None:
        """The names `ScaleDown.also_moves` lists; None: the node's own are not known and
        none moved onto it."""
        if self.own(name) is None and not self.arrived.get(name):
            return None
        return tuple(p.pod.name for p in self.leaving(name))

    def place(
        self, state: CardState, leaving: Sequence[Leaving], upcoming: Collection[str]
    ) -> dict[str, int]:
        """Where each pod of `leaving` finds room (pod name -> node index), placing them in
        `state` one by one (first-fit: see the module docstring; `upcoming`, the nodes a
        later removal considers, last). A pod missing from the answer found none. A removed
        node has no allocatable left in `state`, so takes none."""
        homes: dict[str, int] = {}
        if not leaving:
            return homes
        if self.by_name is None:
            self.by_name = sorted(range(len(self.nodes)), key=lambda i: self.nodes[i].name)
        later = [i for i in self.by_name if self.nodes[i].name in upcoming]
        order = [i for i in self.by_name if self.nodes[i].name not in upcoming] + later
        for moving in leaving:
            shape = other_shape(moving.pod)
            known = moving.pod.constraints
            admits = None if known is None else state.static_ok(known)
            for i in order:
                node = self.nodes[i]
                if admits is not None:
                    if not admits[i]:
                        continue
                elif node.unschedulable or not _filtering(node.taints) <= moving.tolerates:
                    continue
                if state.resources_fit(i, shape):
                    state.add_requested(i, shape.demand)
                    homes[moving.pod.name] = i
                    break
        return homes

    def commit(
        self, state: CardState, name: str, leaving: Sequence[Leaving], homes: dict[str, int]
    ) -> None:
        """`name` is gone: its pods run where they found room, in `state` and here."""
        self.arrived.pop(name, None)
        for moving in leaving:
            home = homes[moving.pod.name]
            state.add_requested(home, other_shape(moving.pod).demand)
            self.arrived.setdefault(self.nodes[home].name, []).append(moving)
