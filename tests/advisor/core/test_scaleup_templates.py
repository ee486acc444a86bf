"""Scale-up builds new nodes from the templates of the existing ones, as the
cluster-autoscaler builds a node from a node group's template: cards, allocatable, labels
and taints. A pod no template admits gets no advice but the autoscaler's reason. Cases are
small and computed by hand in the comments."""

from __future__ import annotations

from dataclasses import replace

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, OtherPod, Placement, Pod
from advisor.core.nodefilters import (
    HOSTNAME_LABEL,
    Allocatable,
    NodeConstraints,
    Resources,
    Taint,
    Toleration,
)
from advisor.core.plan import PlanOptions, plan
from advisor.core.scaling import node_shapes, scale_up_advice, scaling_advice, with_new_nodes
from advisor.core.scaling.actor import CCE_NOT_TRIGGERED
from advisor.core.scaling.templates import NOT_TRIGGERED, NodeShape
from advisor.output.plan import plan_json
from advisor.output.scaling import node_shape_json, not_triggered_json
from tests.advisor.core.constrained import (
    CORE,
    GiB,
    gpu_node,
    gpu_pod,
    selecting,
    strip_node_fields,
)

GPU_TAINT = Taint("dedicated", "NoSchedule", "gpu")
POOL_A = {"pool": "a"}
TOLERANT = NodeConstraints(tolerations=(Toleration("dedicated", "Exists"),))
POOL_A_TOLERANT = replace(TOLERANT, node_selector=(("pool", "a"),))


def pool_a_pod(name: str, gib: int, cores: int, cards: tuple[int, ...] = (0,)) -> Pod:
    return gpu_pod(name, gib, cards=cards, cpu_milli=cores * CORE, constraints=POOL_A_TOLERANT)


def full_pool_a(*pending: Pod) -> Cluster:
    """g1: 2 x 16 GiB, 8 cores, labels pool=a and its hostname, tainted dedicated=gpu,
    full (one 2-card pod of 32 GiB asking no cpu)."""
    node = gpu_node(
        "g1", 16, 16, cpu=8, labels={**POOL_A, HOSTNAME_LABEL: "g1"}, taints=(GPU_TAINT,)
    )
    full = gpu_pod("t/full", 32, "g1", (0, 1), constraints=TOLERANT)
    return Cluster((node,), (full, *pending))


def test_a_new_node_copies_the_template_but_its_name() -> None:
    # p (16 GiB, 2 cores, pool=a, tolerating dedicated) waits: one more g1 hosts it.
    cluster = full_pool_a(pool_a_pod("t/p", 16, 2))
    advice = scale_up_advice(cluster)
    (entry,) = advice.steps
    template = NodeShape(2, 16 * GiB, "", Allocatable(8 * CORE), (("pool", "a"),), (GPU_TAINT,))
    assert (entry.shape, entry.nodes, entry.pods) == (template, 1, ("t/p",))
    assert node_shape_json(entry.shape) == {
        "cards": 2,
        "memory_mib": 16 * GiB,
        "model": "",
        "allocatable": {"cpu": "8"},
        "labels": {"pool": "a"},
        "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
    }
    new = with_new_nodes(cluster, advice.steps).nodes[-1]
    assert (new.name, dict(new.labels), new.taints, new.allocatable) == (
        "scale-up-0-0000",
        {"pool": "a", HOSTNAME_LABEL: "scale-up-0-0000"},
        (GPU_TAINT,),
        Allocatable(8 * CORE),
    )
    assert advice.not_triggered == ()
    placed = {d.pod.name: d.placement for d in diagnose(with_new_nodes(cluster, advice)).pods}
    assert placed["t/p"] == Placement("scale-up-0-0000", (0,))


def test_the_templates_cpu_decides_how_many_nodes() -> None:
    # Four 8 GiB pods of 4 cores each: a new g1's two 16 GiB cards hold all four, but its
    # 8 cores only two: 2 nodes. Without cpu, 1 node.
    cluster = full_pool_a(*(pool_a_pod(f"t/p{i}", 8, 4) for i in range(4)))
    (entry,) = scale_up_advice(cluster).steps
    assert (entry.nodes, entry.pods) == (2, ("t/p0", "t/p1", "t/p2", "t/p3"))
    (gpu_only,) = scale_up_advice(strip_node_fields(cluster)).steps
    assert gpu_only.nodes == 1


def test_a_pod_pending_for_cpu_gets_no_gpu_node() -> None:
    # g1 runs a 16 GiB pod on card 0 taking all 8 cores; p (16 GiB, 1 core) finds card 1
    # free but no core: node-resources. Its GPUs fit, so no new GPU node is proposed; the
    # relief says what g1 lacks (tests/advisor/core/test_relief.py has the moves).
    node = gpu_node("g1", 16, 16, cpu=8)
    cluster = Cluster(
        (node,),
        (gpu_pod("t/f", 16, "g1", (0,), cpu_milli=8 * CORE), gpu_pod("t/p", 16, cpu_milli=CORE)),
    )
    diagnosis = diagnose(cluster)
    assert [d.cause for d in diagnosis.pods] == ["node-resources"]
    plans = plan(cluster, PlanOptions(time_budget_s=None), diagnosis=diagnosis)
    ups = scaling_advice(cluster, plans, diagnosis)[0]
    assert ups.steps == ()
    (freed,) = ups.relief
    assert (freed.pod, freed.node, freed.moves) == ("t/p", "g1", ())


def test_a_new_shape_copies_the_template_that_admits_the_pods() -> None:
    # p needs 4 cards of 16 GiB, pool=a: g1 admits it but has 2 cards; a new shape copies
    # g1's allocatable, labels and taints with 4 cards.
    cluster = full_pool_a(pool_a_pod("t/p", 64, 1, cards=(0, 1, 2, 3)))
    (entry,) = scale_up_advice(cluster).steps
    assert entry.new_shape
    assert entry.shape == NodeShape(
        4, 16 * GiB, "", Allocatable(8 * CORE), (("pool", "a"),), (GPU_TAINT,)
    )


def two_pools(*pending: Pod) -> Cluster:
    """g1: pool a, 8 cores; g2: pool b, 8 cores, tainted dedicated=gpu; both 1 x 16 GiB, full."""
    return Cluster(
        (
            gpu_node("g1", 16, cpu=8, labels={"pool": "a"}),
            gpu_node("g2", 16, cpu=8, labels={"pool": "b"}, taints=(GPU_TAINT,)),
        ),
        (
            gpu_pod("t/f1", 16, "g1"),
            gpu_pod("t/f2", 16, "g2", constraints=TOLERANT),
            *pending,
        ),
    )


def test_pods_no_template_admits_get_the_autoscalers_reason() -> None:
    # p selects pool c: both templates fail NodeAffinity. q (tolerating dedicated, so past
    # the static filters on both) asks 100 cores: both have 8.
    # r selects pool b without tolerating dedicated: g1 fails NodeAffinity, g2 TaintToleration.
    # s (8 GiB, pool a) fits a new g1.
    cluster = two_pools(
        gpu_pod("t/p", 8, constraints=selecting(pool="c")),
        gpu_pod("t/q", 8, cpu_milli=100 * CORE, constraints=TOLERANT),
        gpu_pod("t/r", 8, constraints=selecting(pool="b")),
        gpu_pod("t/s", 8, constraints=selecting(pool="a")),
    )
    advice = scale_up_advice(cluster)
    assert [(e.shape.labels, e.nodes, e.pods) for e in advice.steps] == [
        ((("pool", "a"),), 1, ("t/s",))
    ]
    affinity = "node(s) didn't match Pod's node affinity/selector"
    assert [(n.pod, n.reason) for n in advice.not_triggered] == [
        ("t/p", f"{NOT_TRIGGERED}: 2 {affinity}"),
        ("t/q", f"{NOT_TRIGGERED}: 2 Insufficient cpu"),
        (
            "t/r",
            f"{NOT_TRIGGERED}: 1 {affinity}, 1 node(s) had untolerated taint {{dedicated: gpu}}",
        ),
    ]
    # The plan JSON lists them under their own key; a cluster where every pod can get a
    # node leaves the key out, so GPU-only output reads as before.
    ups, downs = scaling_advice(cluster, plan(cluster), diagnose(cluster))
    data = plan_json(plan(cluster), cluster, ups, downs)
    assert data["scale_up_not_triggered"] == [not_triggered_json(n) for n in advice.not_triggered]
    assert data["scale_up_not_triggered"][0] == {
        "pod": "t/p",
        "reason": f"{NOT_TRIGGERED}: 2 {affinity}",
        "note": CCE_NOT_TRIGGERED,  # cce: its add-on would not act either
    }
    stripped = strip_node_fields(cluster)
    ups, downs = scaling_advice(stripped, plan(stripped), diagnose(stripped))
    assert "scale_up_not_triggered" not in plan_json(plan(stripped), stripped, ups, downs)


def test_templates_ignore_the_hostname_the_cordon_and_condition_taints() -> None:
    # Two nodes alike but for their hostname, one cordoned and tainted not-ready: one
    # template, neither cordoned nor tainted.
    base = gpu_node("g1", 16, cpu=8, labels={**POOL_A, HOSTNAME_LABEL: "g1"})
    twin = replace(
        gpu_node("g2", 16, cpu=8, labels={**POOL_A, HOSTNAME_LABEL: "g2"}, cordoned=True),
        taints=(Taint("node.kubernetes.io/not-ready", "NoExecute"),),
    )
    (template,) = node_shapes(Cluster((base, twin)))
    assert template == NodeShape(1, 16 * GiB, "", Allocatable(8 * CORE), (("pool", "a"),))
    node = template.template("scale-up-0-0000")
    assert (node.unschedulable, node.taints) == (False, ())


def with_residents(*residents: OtherPod) -> Cluster:
    """full_pool_a with `residents` on g1 and four 8 GiB pods of 2 cores waiting."""
    cluster = full_pool_a(*(pool_a_pod(f"t/p{i}", 8, 2) for i in range(4)))
    node = replace(cluster.nodes[0], resident_pods=residents)
    return replace(cluster, nodes=(node,))


def test_a_new_node_runs_the_daemonsets_of_its_template() -> None:
    # The cluster-autoscaler's template keeps the example node's DaemonSet and mirror pods
    # (kubernetes/autoscaler, cluster-autoscaler/simulator/node_info_utils.go,
    # podsExpectedOnFreshNode). Four pods of 2 cores fit one new g1 (8 cores, two 16 GiB
    # cards); with a DaemonSet pod of 1 core on every g1, a new one has 7 cores left: 3 of
    # them fit, the fourth takes a second node.
    assert scale_up_advice(with_residents()).steps[0].nodes == 1
    daemon = OtherPod("kube-system/agent-x1", None, Resources(CORE, 0))
    (entry,) = scale_up_advice(with_residents(daemon)).steps
    assert (entry.nodes, entry.shape.reserved) == (2, (1, CORE, 0))
    assert node_shape_json(entry.shape)["reserved"] == {"pods": 1, "cpu": "1", "memory": "0"}
    # A pod being deleted still takes its core on g1 now, but no new node runs it (the
    # autoscaler skips pods with a deletionTimestamp): one node again.
    leaving = replace(daemon, name="web/leaving", terminating=True)
    (entry,) = scale_up_advice(with_residents(leaving)).steps
    assert (entry.nodes, entry.shape.reserved) == (1, (0, 0, 0))
    assert "reserved" not in node_shape_json(entry.shape)
