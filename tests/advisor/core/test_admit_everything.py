"""A node field that admits every pod changes nothing downstream: a label no selector names,
a taint every pod tolerates, a huge allocatable where none was known. Plans, scale-up and
scale-down come out the same, on random constrained clusters and on GPU-only ones."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster
from advisor.core.nodefilters import Allocatable, Taint, Toleration
from advisor.core.plan import PlanOptions, plan
from advisor.core.scaling import scale_up_advice
from advisor.core.scaling.down import scale_down_advice
from tests.advisor.core.constrained import constrained_clusters
from tests.advisor.core.test_plan_properties import fragmented
from tests.fastloop import examples

UNUSED_LABEL = ("xgpu-test/unused", "yes")  # no selector or affinity of the generators names it
EVERYONE = Taint("xgpu-test/everyone", "NoSchedule", "x")
HUGE = Allocatable(10**12, 2**60, 10**6)


def admit_everything(cluster: Cluster, label: bool, taint: bool, room: bool) -> Cluster:
    """`cluster` with the chosen admit-everything fields added to every node (the taint with
    a toleration on every pod; allocatable only where not known)."""

    def node_of(n: Any) -> Any:
        if label:
            n = replace(n, labels=MappingProxyType({**n.labels, UNUSED_LABEL[0]: UNUSED_LABEL[1]}))
        if taint:
            n = replace(n, taints=(*n.taints, EVERYONE))
        if room:
            a = n.allocatable
            n = replace(
                n,
                allocatable=Allocatable(
                    HUGE.cpu_milli if a.cpu_milli is None else a.cpu_milli,
                    HUGE.memory_bytes if a.memory_bytes is None else a.memory_bytes,
                    HUGE.pods if a.pods is None else a.pods,
                ),
            )
        return n

    tolerate = Toleration(EVERYONE.key, "Exists")
    pods = tuple(
        replace(
            p,
            constraints=replace(p.constraints, tolerations=(*p.constraints.tolerations, tolerate)),
        )
        if taint
        else p
        for p in cluster.pods
    )
    return replace(cluster, nodes=tuple(node_of(n) for n in cluster.nodes), pods=pods)


def outcomes(cluster: Cluster) -> tuple[object, ...]:
    """Everything downstream of the diagnosis that names pods, nodes and cards."""
    diagnosis = diagnose(cluster, node_detail_limit=0)
    report = plan(cluster, PlanOptions(max_evaluations=200), diagnosis=diagnosis)
    ups = scale_up_advice(cluster, diagnosis=diagnosis)
    downs = scale_down_advice(cluster)
    return (
        [(d.pod.name, d.cause, d.placement) for d in diagnosis.pods],
        report.plans,
        [(u.pod, u.cause) for u in report.unresolved],
        report.ideal,
        [
            (e.shape.cards, e.shape.memory_mib, e.shape.model, e.nodes, e.pods, e.new_shape)
            for e in ups
        ],
        [(n.pod, n.reason) for n in ups.not_triggered],
        downs.steps,
        downs.held,
    )


SETTINGS = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
FIELDS = st.tuples(st.booleans(), st.booleans(), st.booleans()).filter(any)


@SETTINGS
@given(constrained_clusters(), FIELDS)
def test_admit_everything_changes_nothing_on_constrained_clusters(
    cluster: Cluster, fields: tuple[bool, bool, bool]
) -> None:
    assert outcomes(admit_everything(cluster, *fields)) == outcomes(cluster)


@SETTINGS
@given(fragmented(), FIELDS)
def test_admit_everything_changes_nothing_on_gpu_only_clusters(
    cluster: Cluster, fields: tuple[bool, bool, bool]
) -> None:
    assert outcomes(admit_everything(cluster, *fields)) == outcomes(cluster)
