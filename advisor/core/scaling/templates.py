"""Node group templates for scale-up: what a new node would be, and whether it admits a pod.

The cluster-autoscaler builds a new node as a copy of a node group's template (its cards,
allocatable, labels and taints, and the pods a fresh node runs: the example node's
DaemonSet and mirror pods not being deleted; kubernetes/autoscaler,
cluster-autoscaler/simulator/node_info_utils.go, podsExpectedOnFreshNode) and asks the
scheduler's filters whether a Pending pod would fit on it. The advisor knows no node
groups, so nodes with one template form one: a template is everything kube-scheduler's
filters read of a node but its name and its cordon, and what its fresh pods take. A pod
no template admits gets no advice but the autoscaler's reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from advisor.core.mig import MigInstance
from advisor.core.model import Card, Cluster, MigStrategy, Node, OtherPod
from advisor.core.nodefilters import (
    HOSTNAME_LABEL,
    NOT_KNOWN,
    Allocatable,
    Resources,
    Taint,
)
from advisor.core.state import CardState, Shape

# Taints the autoscaler strips from a template (kubernetes/autoscaler,
# cluster-autoscaler/utils/taints/taints.go, SanitizeTaints): its own, and those that
# node conditions and cordons put on a live node, which a new node does not carry.
TEMPLATE_DROPPED_TAINTS = frozenset(
    {
        "ToBeDeletedByClusterAutoscaler",
        "DeletionCandidateOfClusterAutoscaler",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/network-unavailable",
        "node.kubernetes.io/out-of-disk",
    }
)
# The cluster-autoscaler's NotTriggerScaleUp event text, then its reasons counted per node group.
NOT_TRIGGERED = "pod didn't trigger scale-up (it wouldn't fit if a new node is added)"


@dataclass(frozen=True, slots=True)
class NodeShape:
    """A node group's template: card count, memory per card, card model, and what the other
    filters read (allocatable, labels but the hostname, taints). The defaults admit every
    pod, so a GPU-only cluster's templates are its card shapes alone."""

    cards: int
    memory_mib: int
    model: str = ""
    allocatable: Allocatable = NOT_KNOWN
    labels: tuple[tuple[str, str], ...] = ()  # sorted by key
    taints: tuple[Taint, ...] = ()
    # (pods, cpu millicores, memory bytes) of the pods a fresh node runs from the start
    reserved: tuple[int, int, int] = (0, 0, 0)
    # Per card, its MIG instances as the node's cards have them now (a new node's all free;
    # None: MIG off); () where no card is in MIG mode. A MIG card takes no vGPU pod.
    mig: tuple[tuple[MigInstance, ...] | None, ...] = ()
    mig_strategy: MigStrategy = "none"

    @staticmethod
    def of(node: Node) -> NodeShape:
        """Mixed card sizes count as the smallest (what every card can be relied on for);
        a MIG card's memory is no vGPU memory, so only the others count where there are."""
        models = Counter(c.model for c in node.cards)
        model = min(models, key=lambda m: (-models[m], m)) if models else ""
        whole = [c for c in node.cards if c.mig is None] or node.cards
        partitioned = any(c.mig is not None for c in node.cards)
        return NodeShape(
            len(node.cards),
            min((c.memory_mib for c in whole), default=0),
            model,
            node.allocatable,
            tuple(sorted((k, v) for k, v in node.labels.items() if k != HOSTNAME_LABEL)),
            tuple(t for t in node.taints if t.key not in TEMPLATE_DROPPED_TAINTS),
            _reserved(node),
            tuple(c.mig for c in node.cards) if partitioned else (),
            node.mig_strategy if partitioned else "none",
        )

    def sort_key(self) -> tuple[Any, ...]:
        """Card count, card memory, model first (all a GPU-only template has), then the rest."""
        a = self.allocatable
        return (
            self.cards,
            self.memory_mib,
            self.model,
            tuple(-1 if v is None else v for v in (a.cpu_milli, a.memory_bytes, a.pods)),
            self.labels,
            tuple((t.key, t.value, t.effect) for t in self.taints),
            self.reserved,
            tuple(() if m is None else tuple((i.profile, i.start) for i in m) for m in self.mig),
            self.mig_strategy,
        )

    @property
    def vgpu_cards(self) -> int:
        """The cards a vGPU or whole-card pod may take: those not in MIG mode."""
        return self.cards - sum(m is not None for m in self.mig)

    def hosts(self, shape: Shape) -> bool:
        """Whether the cards can take `shape` (the other filters: `TemplateCheck`)."""
        return shape.gpus <= self.vgpu_cards and shape.card_memory_mib <= self.memory_mib

    def template(self, name: str) -> Node:
        """A new node of this group, named `name` (its hostname label too, as the kubelet
        sets it), not cordoned, running the pods a fresh node runs (`reserved`, as one pod
        per slot) and those the scheduler puts there."""
        mig = self.mig or (None,) * self.cards
        cards = tuple(Card(i, self.memory_mib, self.model, mig=mig[i]) for i in range(self.cards))
        labels = MappingProxyType({**dict(self.labels), HOSTNAME_LABEL: name})
        count, cpu, memory = self.reserved
        resident = tuple(
            OtherPod(
                f"kube-system/{name}-fresh-{i}",
                None,
                Resources(cpu, memory) if i == 0 else Resources(),
            )
            for i in range(count)
        )
        return Node(
            name,
            cards,
            None,
            self.allocatable,
            labels,
            self.taints,
            resident_pods=resident,
            mig_strategy=self.mig_strategy,
        )


def _reserved(node: Node) -> tuple[int, int, int]:
    """What the pods a fresh node of `node`'s group runs take: its resident pods (DaemonSet
    and mirror pods) but those being deleted."""
    fresh = [p for p in node.resident_pods if not p.terminating]
    return (
        len(fresh),
        sum(p.resources.cpu_milli for p in fresh),
        sum(p.resources.memory_bytes for p in fresh),
    )


def node_shapes(cluster: Cluster) -> tuple[NodeShape, ...]:
    """The cluster's node group templates, one per distinct template, in `sort_key` order."""
    return tuple(
        sorted({NodeShape.of(n) for n in cluster.nodes if n.cards}, key=NodeShape.sort_key)
    )


@dataclass(frozen=True, slots=True)
class NotTriggered:
    """A Pending pod no template admits: no node added would let it run."""

    pod: str
    reason: str
    note: str | None = None  # on CCE: that its Autoscaler add-on would not act either


class TemplateCheck:
    """The session's non-GPU filters on an empty node of each template: the state's own
    checks (`CardState.static_rejections`, `resource_shortfalls`, in the order and words of
    `CardState.fit`), so the reasons given are the ones it decides by."""

    def __init__(self, templates: Sequence[NodeShape], cluster: Cluster) -> None:
        self.templates = tuple(templates)
        nodes = tuple(t.template(f"template-{i}") for i, t in enumerate(self.templates))
        self.state = CardState(replace(cluster, nodes=nodes, pods=()))

    def rejections(self, shape: Shape) -> dict[NodeShape, tuple[str, ...]]:
        """Template -> the first filter's reasons, for the templates that refuse `shape`."""
        static = self.state.static_rejections(shape.constraints)
        short = self.state.resource_shortfalls(shape)
        refused: dict[NodeShape, tuple[str, ...]] = {}
        for i, template in enumerate(self.templates):
            reasons = self.state.fit.rejection(static.get(i, ()), short[i])
            if reasons:
                refused[template] = reasons
        return refused

    def admitting(self, shape: Shape) -> tuple[NodeShape, ...]:
        refused = self.rejections(shape)
        return tuple(t for t in self.templates if t not in refused)

    def not_triggered(self, shape: Shape) -> str:
        """The autoscaler's words for a pod every template refuses, reasons counted over
        the templates (its node groups) and listed as kube-scheduler lists its own."""
        counts = Counter(r for reasons in self.rejections(shape).values() for r in reasons)
        return f"{NOT_TRIGGERED}: " + ", ".join(sorted(f"{n} {r}" for r, n in counts.items()))
