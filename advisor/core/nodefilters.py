"""The rest of the node: kube-scheduler's filters before the GPU one (docs/design.md §9.1).

kube-scheduler runs its filter plugins on every node in a fixed order and stops at the first
that rejects it: NodeUnschedulable, NodeAffinity, TaintToleration, NodeResourcesFit, then
(here) the profile's GPU filter. Each function below both decides and explains, as
`fitsRequest` returns the reasons it decided by: it returns the node's rejection messages,
kube-scheduler's own words, and an empty tuple when the node passes. So an explanation can
never drift from the decision that produced it.

Volcano's session runs the same static filters (its predicates plugin) but not
NodeResourcesFit: allocate checks the node's resources itself, first (`VOLCANO_FIT`).

Values are frozen and hashable: a pod's `NodeConstraints` is part of the key the core caches
per-node verdicts under, since labels, taints and cordons do not change during a simulation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar, overload

import numpy as np
import numpy.typing as npt

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
OPERATORS: tuple[Operator, ...] = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
EFFECTS: tuple[Effect, ...] = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TolerationOperator = Literal["Equal", "Exists"]
NAME_FIELD = "metadata.name"  # the one field a matchFields requirement may name

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# kube-scheduler's messages (pkg/scheduler/framework/plugins/*), word for word.
MSG_UNSCHEDULABLE = "node(s) were unschedulable"
MSG_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
MSG_TOO_MANY_PODS = "Too many pods"
MSG_CPU = "Insufficient cpu"
MSG_MEMORY = "Insufficient memory"
# Volcano's word for the pod slot: "Insufficient " + the resource's name (pods)
MSG_PODS_VOLCANO = "Insufficient pods"


@dataclass(frozen=True, slots=True)
class Resources:
    """What a pod takes from its node: its effective request (max of the containers' sum and
    each init container, plus overhead), cpu in millicores, memory in bytes."""

    cpu_milli: int = 0
    memory_bytes: int = 0


NO_RESOURCES = Resources()


@dataclass(frozen=True, slots=True)
class Allocatable:
    """Node.status.allocatable; None: not known, so never a limit."""

    cpu_milli: int | None = None
    memory_bytes: int | None = None
    pods: int | None = None


NOT_KNOWN = Allocatable()


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: Effect
    value: str = ""


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""  # empty with Exists: tolerates every taint
    operator: TolerationOperator = "Equal"
    value: str = ""
    effect: Effect | Literal[""] = ""  # empty: every effect

    def tolerates(self, taint: Taint) -> bool:
        """core/v1 helper ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        # Equal. (An empty key with Equal would match any taint of that value, as upstream
        # does; the API server and the scenario loader refuse such a toleration.)
        return self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """labels.Selector semantics for one NodeSelectorRequirement."""
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        if self.operator == "In":
            return labels[self.key] in self.values
        # Gt / Lt: both sides int64 as Go's ParseInt reads them; otherwise no match.
        have, bound = parse_int64(labels[self.key]), parse_int64(self.values[0])
        if have is None or bound is None:
            return False
        return have > bound if self.operator == "Gt" else have < bound

    @property
    def valid(self) -> bool:
        """Whether labels.NewRequirement accepts it: a valid label key and valid label
        values, for every operator (apimachinery v0.35.3 pkg/labels/selector.go:219, so a
        Gt bound of "+2", which ParseInt reads, still fails). kube-scheduler lets a term with
        an invalid requirement match no node (the API server does not check these values)."""
        return _valid_key(self.key) and all(map(_valid_value, self.values))


@dataclass(frozen=True, slots=True)
class Term:
    """A NodeSelectorTerm: its requirements are ANDed; a term with none matches no node."""

    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()  # matchFields: metadata.name only

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if not self.expressions and not self.fields:
            return False
        if not all(r.valid for r in self.expressions):
            return False
        by_name = {NAME_FIELD: name}
        return all(r.matches(labels) for r in self.expressions) and all(
            r.matches(by_name) for r in self.fields
        )


@dataclass(frozen=True, slots=True)
class NodeConstraints:
    """Where a pod may go: nodeSelector, required node affinity (terms ORed; None: none
    given), tolerations. The default admits every node that is not tainted or cordoned."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required: tuple[Term, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()


NO_CONSTRAINTS = NodeConstraints()
# The one label that differs node by node (the kubelet sets it to the node's name).
HOSTNAME_LABEL = "kubernetes.io/hostname"


def reads_label(constraints: NodeConstraints, key: str) -> bool:
    """Whether the pod's nodeSelector or required node affinity reads label `key`."""
    if any(k == key for k, _ in constraints.node_selector):
        return True
    return any(r.key == key for term in constraints.required or () for r in term.expressions)


_INT64 = re.compile(r"[+-]?[0-9]+")
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def parse_int64(text: str) -> int | None:
    """An integer as Go's strconv.ParseInt(text, 10, 64) reads it, else None (Python's
    int() would also take "1_000", spaces and values beyond int64)."""
    if _INT64.fullmatch(text) is None:
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _valid_value(value: str) -> bool:
    """A label value: empty, or at most 63 characters of [A-Za-z0-9-_.], alphanumeric at
    both ends (apimachinery's IsValidLabelValue)."""
    return value == "" or (len(value) <= 63 and _NAME.fullmatch(value) is not None)


def _valid_key(key: str) -> bool:
    """A label key: an optional DNS-subdomain prefix and '/', then a name as above."""
    prefix, slash, name = key.rpartition("/")
    if slash and not (len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and _NAME.fullmatch(name) is not None


# -- the filters, in kube-scheduler's order ----------------------------------------------


class Node(Protocol):
    """What the static filters read of a node (`core.model.Node` is one): below the model,
    so that the model's values can hold this module's."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def taints(self) -> tuple[Taint, ...]: ...

    @property
    def unschedulable(self) -> bool: ...


def unschedulable(node: Node, pod: NodeConstraints) -> tuple[str, ...]:
    """NodeUnschedulable: a cordoned node, unless the pod tolerates its NoSchedule taint."""
    if not node.unschedulable:
        return ()
    cordon = Taint(UNSCHEDULABLE_TAINT, "NoSchedule")
    if any(t.tolerates(cordon) for t in pod.tolerations):
        return ()
    return (MSG_UNSCHEDULABLE,)


def node_affinity(node: Node, pod: NodeConstraints) -> tuple[str, ...]:
    """NodeAffinity: every nodeSelector label matches and, if given, one required term."""
    labels = dict(node.labels)
    selected = all(labels.get(key) == value for key, value in pod.node_selector)
    if selected and pod.required is not None:
        selected = any(term.matches(node.name, labels) for term in pod.required)
    return () if selected else (MSG_AFFINITY,)


def taint_toleration(node: Node, pod: NodeConstraints) -> tuple[str, ...]:
    """TaintToleration: the first NoSchedule or NoExecute taint no toleration covers
    (PreferNoSchedule only scores, so never filters)."""
    for taint in node.taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(t.tolerates(taint) for t in pod.tolerations):
            return (f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}",)
    return ()


STATIC_FILTERS = (unschedulable, node_affinity, taint_toleration)


def static_reasons(node: Node, pod: NodeConstraints) -> tuple[str, ...]:
    """The first static filter's rejection (they never change while pods come and go)."""
    for check in STATIC_FILTERS:
        reasons = check(node, pod)
        if reasons:
            return reasons
    return ()


# NodeResourcesFit's reasons, in the order of CardState's resource columns (SLOTS, CPU,
# MEMORY); `CardState.resource_shortfalls` applies `lacks` to every node at once.
RESOURCE_REASONS = (MSG_TOO_MANY_PODS, MSG_CPU, MSG_MEMORY)

_Room = TypeVar("_Room", int, "npt.NDArray[np.int64]")


@overload
def lacks(want: int, room: int) -> bool: ...
@overload
def lacks(want: npt.NDArray[np.int64], room: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]: ...
def lacks(want: object, room: object) -> object:
    """NodeResourcesFit's `fitsRequest` test of one resource, its one definition: the node
    lacks it when the pod asks some (pod slots: always one) and more than the room left
    (allocatable - requested). Python ints (exact sums) or arrays (every node at once)."""
    return (want > 0) & (want > room)  # type: ignore[operator]


def resource_reasons(short: Iterable[bool]) -> tuple[str, ...]:
    """The reasons NodeResourcesFit gives for these shortfalls (slots, cpu, memory): the
    explanation is read off the verdict, never judged again."""
    return tuple(r for r, bad in zip(RESOURCE_REASONS, short, strict=True) if bad)


@dataclass(frozen=True, slots=True)
class ResourceFit:
    """How a session judges a node's pod slots, cpu and memory for a pod (`CardState`'s
    columns SLOTS, CPU, MEMORY), and in what words. The profile's session picks one
    (`SessionRules.resource_fit`).

    kube-scheduler's NodeResourcesFit (`fitsRequest`) skips what the pod asks none of, so an
    overcommitted node still takes a pod asking no cpu; it names every resource short, after
    the static filters. Volcano's allocate (volcano v1.15.1 actions/allocate/allocate.go,
    `predicate`) first runs `task.InitResreq.LessEqualWithResourcesName(node.FutureIdle(),
    api.Zero)`: every dimension, zero requests too (api/resource_info.go), the pod slot among
    them (api/pod_info.go GetPodResourceRequest adds `pods: 1`); it names the first resource
    short only, cpu, memory, then the scalars (api/unschedule_info.go
    WrapInsufficientResourceReason), before any predicate runs."""

    reasons: tuple[str, str, str]  # per column
    order: tuple[int, int, int]  # the columns in the order the check lists them
    skips_zero: bool  # a resource the pod asks none of never lacks
    first_only: bool  # only the first resource short is named
    before_static: bool  # checked before NodeUnschedulable, NodeAffinity, TaintToleration

    @overload
    def lacks(self, want: int, room: int) -> bool: ...
    @overload
    def lacks(
        self, want: npt.NDArray[np.int64], room: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.bool_]: ...
    def lacks(self, want: object, room: object) -> object:
        """The node lacks the resource: the pod asks more than the room left (allocatable -
        requested; negative on an overcommitted node). Ints or arrays, as `lacks`."""
        if self.skips_zero:
            return lacks(want, room)  # type: ignore[call-overload]
        return want > room  # type: ignore[operator]

    def named(self, short: Sequence[bool]) -> tuple[str, ...]:
        """Every resource short (one bool per column), in the session's words and order."""
        return tuple(self.reasons[c] for c in self.order if short[c])

    def words(self, short: Sequence[bool]) -> tuple[str, ...]:
        """The node's reasons for its shortfalls, as the session gives them: read off the
        verdict, never judged again."""
        named = self.named(short)
        return named[:1] if self.first_only else named

    def rejection(self, static: tuple[str, ...], short: Sequence[bool]) -> tuple[str, ...]:
        """The node's words before the GPU filter: those of the first check to reject it."""
        resources = self.words(short)
        return (resources or static) if self.before_static else (static or resources)

    def counts(
        self,
        static_counts: Mapping[str, int],
        static_rejected: Mapping[int, tuple[str, ...]],
        short: npt.NDArray[np.bool_],
    ) -> dict[str, int]:
        """`rejection` counted over every node (the static filters' verdicts and the
        (nodes, 3) shortfalls given): the FitError histogram's entries before the GPU's."""
        counts = dict(static_counts)
        lacking: npt.NDArray[np.bool_] = np.asarray(short.any(axis=1), dtype=np.bool_)
        if self.before_static:
            for node, reasons in static_rejected.items():  # named by their resources instead
                if lacking[node]:
                    for reason in reasons:
                        counts[reason] -= 1
            counted = lacking
        else:
            counted = lacking.copy()
            counted[list(static_rejected)] = False
        rows = short[counted]
        if self.first_only:
            ordered = rows[:, list(self.order)]
            firsts = np.asarray(self.order)[np.argmax(ordered, axis=1)]
            per_column = np.bincount(firsts, minlength=3)
        else:
            per_column = rows.sum(axis=0)
        for column, n in enumerate(per_column):
            if n:
                counts[self.reasons[column]] = counts.get(self.reasons[column], 0) + int(n)
        return {reason: n for reason, n in counts.items() if n}


KUBE_FIT = ResourceFit(RESOURCE_REASONS, (0, 1, 2), True, False, False)
VOLCANO_FIT = ResourceFit((MSG_PODS_VOLCANO, MSG_CPU, MSG_MEMORY), (1, 2, 0), False, True, True)


def fit_error(nodes_total: int, reasons: Iterable[tuple[str, int]], volcano: bool = False) -> str:
    """kube-scheduler's FitError text: '0/5 nodes are available: 2 Insufficient cpu, 3
    card-memory.' (its histogram entries sorted as strings, as `sortReasonsHistogram`).
    Volcano's session words it '0/5 nodes are unavailable: …' (volcano v1.15.1
    pkg/scheduler/api/unschedule_info.go, FitErrors.Error: same sorted histogram)."""
    parts = sorted(f"{count} {reason}" for reason, count in reasons)
    verb = "unavailable" if volcano else "available"
    return f"0/{nodes_total} nodes are {verb}: " + ", ".join(parts) + "."


def effective_request(
    containers: Iterable[Resources], init_containers: Iterable[Resources], overhead: Resources
) -> Resources:
    """A pod's request as NodeResourcesFit computes it: per resource, the larger of the
    containers' sum and any one init container, plus the pod overhead."""
    running, init = list(containers), list(init_containers)
    cpu = max([sum(c.cpu_milli for c in running), *(c.cpu_milli for c in init)])
    memory = max([sum(c.memory_bytes for c in running), *(c.memory_bytes for c in init)])
    return Resources(cpu + overhead.cpu_milli, memory + overhead.memory_bytes)


def cpu_text(milli: int) -> str:
    """Millicores as a Kubernetes quantity: 8000 -> "8", 500 -> "500m"."""
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"


def bytes_text(value: int) -> str:
    """Bytes as a Kubernetes quantity in the largest binary unit that divides them."""
    for unit, size in (
        ("Ei", 2**60),
        ("Pi", 2**50),
        ("Ti", 2**40),
        ("Gi", 2**30),
        ("Mi", 2**20),
        ("Ki", 2**10),
    ):
        if value >= size and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)
