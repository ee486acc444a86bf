"""Shared plumbing for the tests that replay kube-scheduler's own filter tables.

Each `test_upstream_*` module converts the cases of one upstream test function into
`Case` values, judged under a profile whose session is kube-scheduler's (`hami`; under
Volcano's, allocate checks the node's resources its own way: test_volcano_resource_check):
one GPU node (one card, with the upstream node's name, labels, taints,
cordon, allocatable and pods already on it) and one Pending GPU pod (with the upstream
pod's node selector, required node affinity, tolerations and effective request). A case
is then judged three ways, each of which must give the upstream verdict:

* the per-node filters directly (`nodefilters.static_reasons`,
  `CardState.resource_shortfalls`);
* `diagnose()` on the cluster built from dataclasses;
* `diagnose()` on the cluster read by the scenario loader from the scenario keys of
  docs/design.md §9.1 (written here by hand, not by the project's scenario writer).

Upstream source: github.com/kubernetes/kubernetes. The index these tables were read from
keeps file versions by commit, not by tag, so each module names the commit of the file
version it converts. The reason strings are kube-scheduler's for releases v1.26 to v1.33
(the TaintToleration reason names the taint, "node(s) had untolerated taint {key: value}";
kubernetes/kubernetes#134740, merged for v1.35 and cherry-picked into release-1.34 by
#135023, replaced it with "node(s) had untolerated taint(s)").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.core.diagnose import diagnose
from advisor.core.diagnosis import PodDiagnosis
from advisor.core.model import Card, Cluster, Node, OtherPod, Placement, Pod, Request, Scheduler
from advisor.core.nodefilters import (
    NO_CONSTRAINTS,
    NO_RESOURCES,
    NOT_KNOWN,
    RESOURCE_REASONS,
    Allocatable,
    NodeConstraints,
    Requirement,
    Resources,
    Taint,
    Term,
    Toleration,
    static_reasons,
)
from advisor.core.occupancy import build_state
from advisor.core.profiles import profile_of
from advisor.core.state import Shape
from advisor.scenario import scenario_from_data

REPOSITORY = "kubernetes/kubernetes"
NODE = "gpu-node"  # the node's name where the upstream case leaves it empty
POD = "default/pending"
CARD_MIB = 16384
POD_MIB = 1024  # one card, well within it: only the node filters can say no
BUILDS = ("dataclasses", "scenario")
KUBE = Scheduler("hami")  # kube-scheduler's session: NodeResourcesFit decides the resources


@dataclass(frozen=True, slots=True)
class Source:
    """One upstream test function at one stored version of its file."""

    path: str
    test: str
    commit: str

    def cite(self, case: str) -> str:
        return f"{REPOSITORY}@{self.commit[:12]} {self.path} {self.test}: {case!r}"


@dataclass(frozen=True)
class Case:
    """An upstream case in our model; `want` is kube-scheduler's reasons, () = fits."""

    name: str  # the upstream case's name, verbatim
    want: tuple[str, ...] = ()
    node: str = NODE
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    cordoned: bool = False
    allocatable: Allocatable = NOT_KNOWN
    others: tuple[Resources, ...] = ()  # effective requests of the pods already there
    constraints: NodeConstraints = NO_CONSTRAINTS
    resources: Resources = NO_RESOURCES  # the Pending pod's effective request
    # Whether the node could never take the pod, even empty (request above allocatable):
    # diagnose() then says `unsatisfiable` rather than `node-resources`.
    never: bool = False

    @property
    def static_want(self) -> tuple[str, ...]:
        return () if not self.want or self.want[0] in RESOURCE_REASONS else self.want

    @property
    def resource_want(self) -> tuple[str, ...]:
        return self.want if self.want and self.want[0] in RESOURCE_REASONS else ()


# -- building a case's pieces --------------------------------------------------------------


def expr(key: str, operator: str, *values: str) -> Requirement:
    return Requirement(key, operator, values)  # type: ignore[arg-type]


def name_in(*names: str) -> Requirement:
    """A matchFields requirement on metadata.name (In, one value each upstream)."""
    return Requirement("metadata.name", "In", names)


def term(*expressions: Requirement, fields: tuple[Requirement, ...] = ()) -> Term:
    return Term(tuple(expressions), fields)


def constraints(
    selector: Mapping[str, str] | None = None,
    required: tuple[Term, ...] | None = None,
    tolerations: tuple[Toleration, ...] = (),
) -> NodeConstraints:
    """What the scenario loader builds: the node selector as sorted pairs."""
    return NodeConstraints(tuple(sorted((selector or {}).items())), required, tolerations)


def affinity(*terms: Term, selector: Mapping[str, str] | None = None) -> NodeConstraints:
    return constraints(selector, tuple(terms))


def tolerating(*tolerations: Toleration) -> NodeConstraints:
    return constraints(tolerations=tolerations)


def res(cpu_milli: int = 0, memory_bytes: int = 0) -> Resources:
    return Resources(cpu_milli, memory_bytes)


# -- the cluster, two ways ------------------------------------------------------------------


def cluster_of(case: Case, running: tuple[Pod, ...] = ()) -> Cluster:
    others = tuple(OtherPod(f"default/other-{i}", None, r) for i, r in enumerate(case.others))
    node = Node(
        case.node,
        (Card(0, CARD_MIB),),
        others or None,  # as the loader reads a node without other_pods
        allocatable=case.allocatable,
        labels=dict(case.labels),
        taints=case.taints,
        unschedulable=case.cordoned,
    )
    pending = Pod(POD, Request(1, POD_MIB), resources=case.resources, constraints=case.constraints)
    return Cluster((node,), (*running, pending), scheduler=KUBE)


def scenario_of(case: Case) -> dict[str, Any]:
    """The case as scenario-file data (the keys of docs/design.md §9.1)."""
    node: dict[str, Any] = {"name": case.node, "cards": [{"index": 0, "memory_mib": CARD_MIB}]}
    if case.labels:
        node["labels"] = dict(case.labels)
    if case.taints:
        node["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in case.taints]
    if case.cordoned:
        node["unschedulable"] = True
    a = case.allocatable
    allocatable = {
        key: text
        for key, text in (
            ("cpu", None if a.cpu_milli is None else f"{a.cpu_milli}m"),
            ("memory", None if a.memory_bytes is None else str(a.memory_bytes)),
            ("pods", a.pods),
        )
        if text is not None
    }
    if allocatable:
        node["allocatable"] = allocatable
    if case.others:
        node["other_pods"] = [
            {"name": f"default/other-{i}", "resources": _resources_data(r)}
            for i, r in enumerate(case.others)
        ]
    pod: dict[str, Any] = {"name": POD, "request": {"gpus": 1, "memory_mib": POD_MIB}}
    if case.resources != NO_RESOURCES:
        pod["resources"] = _resources_data(case.resources)
    c = case.constraints
    if c.node_selector:
        pod["node_selector"] = dict(c.node_selector)
    if c.required is not None:
        pod["affinity"] = {"node": {"required": [_term_data(t) for t in c.required]}}
    if c.tolerations:
        pod["tolerations"] = [_toleration_data(t) for t in c.tolerations]
    return {"scheduler": {"profile": KUBE.profile}, "nodes": [node], "pods": [pod]}


def _resources_data(r: Resources) -> dict[str, str]:
    return {"cpu": f"{r.cpu_milli}m", "memory": str(r.memory_bytes)}


def _term_data(t: Term) -> dict[str, Any]:
    data: dict[str, Any] = {"match_expressions": [_requirement_data(r) for r in t.expressions]}
    if t.fields:
        data["match_fields"] = [_requirement_data(r) for r in t.fields]
    return data


def _requirement_data(r: Requirement) -> dict[str, Any]:
    data: dict[str, Any] = {"key": r.key, "operator": r.operator}
    if r.values:
        data["values"] = list(r.values)
    return data


def _toleration_data(t: Toleration) -> dict[str, str]:
    data: dict[str, str] = {"operator": t.operator}
    for key, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
        if value:
            data[key] = value
    return data


def build(case: Case, how: str) -> Cluster:
    """The case's cluster from dataclasses, or read by the scenario loader; the loader
    must read back exactly what the case says."""
    built = cluster_of(case)
    if how == "dataclasses":
        return built
    loaded = scenario_from_data(scenario_of(case), "upstream.yaml")
    (node,), (pod,) = loaded.nodes, loaded.pods
    assert node == built.nodes[0]
    assert dict(node.labels) == dict(case.labels)
    assert (pod.constraints, pod.resources) == (case.constraints, case.resources)
    return loaded


# -- judging ----------------------------------------------------------------------------------


def filter_reasons(cluster: Cluster) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(static filters' reasons, NodeResourcesFit's reasons) for the pod on the node."""
    node, pod = cluster.nodes[0], cluster.pending[0]
    short = build_state(cluster).resource_shortfalls(Shape.of_pod(pod))[0]
    found = tuple(r for r, bad in zip(RESOURCE_REASONS, short, strict=True) if bad)
    return static_reasons(node, pod.constraints), found


def assert_filters(case: Case, source: Source | None = None) -> None:
    where = source.cite(case.name) if source else case.name
    got = filter_reasons(cluster_of(case))
    assert got == (case.static_want, case.resource_want), where


def assert_diagnosis(case: Case, how: str, source: Source | None = None) -> PodDiagnosis:
    """diagnose() says what kube-scheduler says: fits, or the FitError with its reasons."""
    where = source.cite(case.name) if source else case.name
    cluster = build(case, how)
    (verdict,) = diagnose(cluster).pods
    said = f"{where}: {verdict.cause}: {verdict.message}"
    if not case.want:
        assert verdict.cause == "schedulable", said
        assert verdict.placement == Placement(case.node, (0,)), said
        return verdict
    # kube-scheduler's FitError: one count per reason, histogram entries sorted as text;
    # Volcano's session (the profiles that run it) words the same histogram "unavailable".
    verb = "unavailable" if profile_of(cluster.scheduler).session.volcano else "available"
    fit_error = f"0/1 nodes are {verb}: " + ", ".join(sorted(f"1 {r}" for r in case.want))
    if case.static_want or case.never:
        assert verdict.cause == "unsatisfiable", said
    else:
        assert verdict.cause == "node-resources", said
        assert verdict.reason_counts == tuple((r, 1) for r in case.want), said
        ((name, lines),) = verdict.node_reasons
        assert name == case.node, said
        assert tuple(line.split(":")[0] for line in lines) == case.want, said
    if case.static_want:
        assert verdict.message == fit_error + ".", said
    elif case.never:
        assert "allocatable" in verdict.message, said
    else:
        assert verdict.message.startswith(fit_error + ". "), said
    assert verdict.placement is None, said
    return verdict
