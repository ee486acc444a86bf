"""assemble with MIG cards (docs/design.md §13): a card the exporter reports in MIG mode
(`xgpu_card_mig_mode` 1) carries its GPU instances (`xgpu_mig_instance_memory_total_bytes`,
labelled GPU_I_PROFILE and mig_start as the exporter writes them), so no vGPU pod is placed
on it; the node's strategy is the device plugin's label."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from advisor.core.gang import judge
from advisor.core.mig import MigInstance
from advisor.core.model import Pod, Request
from advisor.podspec import parse_pod
from advisor.podspec.node import NodeScheduling
from advisor.sources.assemble import assemble
from advisor.sources.mignodes import MIG_STRATEGY_LABEL
from advisor.sources.values import CARD_MIG_MODE, MIB, MIG_INSTANCE, KubeNode, KubeState, Sample
from tests.advisor.sources.builders import card, node_info, parsed
from tests.advisor.sources.test_assemble import loads
from tests.kubeapi import objects

A100 = "NVIDIA A100-SXM4-40GB"
MIXED = {"nvidia.com/mig.strategy": "mixed"}


def _mig_card(
    node: str, index: int, *instances: tuple[str, int], mode: float = 1.0
) -> list[Sample]:
    key = {"node": node, "gpu_index": str(index), "gpu_uuid": f"GPU-{node}-{index}"}
    samples = [*card(node, index, 40960, model=A100), Sample(CARD_MIG_MODE, key, mode)]
    for gi, (profile, start) in enumerate(instances):
        labels = {**key, "GPU_I_ID": str(gi + 1), "GPU_I_PROFILE": profile, "mig_start": str(start)}
        samples.append(Sample(MIG_INSTANCE, labels, 4864.0 * MIB))
    return samples


def _kube(node: str, labels: dict[str, str]) -> KubeState:
    return KubeState("k", nodes=(KubeNode(node, scheduling=NodeScheduling(labels=labels)),))


def test_a_mig_card_carries_its_instances_and_the_strategy_label() -> None:
    samples = [
        node_info("m"),
        *_mig_card("m", 0, ("3g.20gb", 4), ("1g.5gb", 0)),
        *_mig_card("m", 1, mode=0.0),  # MIG off: a vGPU card as before
    ]
    result = assemble(samples, _kube("m", {MIG_STRATEGY_LABEL: "mixed"}))
    (node,) = result.cluster.nodes
    assert node.mig_strategy == "mixed"
    assert node.cards[0].mig == (MigInstance("1g.5gb", 0), MigInstance("3g.20gb", 4))
    assert node.cards[1].mig is None
    assert result.warnings == ()
    loads(result.cluster)


def test_without_the_label_a_mig_node_is_modelled_mixed_and_said_so() -> None:
    result = assemble([node_info("m"), *_mig_card("m", 0, ("7g.40gb", 0))])
    (node,) = result.cluster.nodes
    assert node.mig_strategy == "mixed"
    assert result.warnings == (
        f"node m: MIG cards and no {MIG_STRATEGY_LABEL} label; modelled as mixed",
    )
    loads(result.cluster)


def test_single_needs_every_card_alike() -> None:
    samples = [
        node_info("m"),
        *_mig_card("m", 0, ("7g.40gb", 0)),
        *_mig_card("m", 1, ("3g.20gb", 0)),
    ]
    result = assemble(samples, _kube("m", {MIG_STRATEGY_LABEL: "single"}))
    assert result.cluster.nodes[0].mig_strategy == "mixed"
    assert "not all partitioned alike" in result.warnings[0]
    alike = [node_info("m"), *_mig_card("m", 0, ("7g.40gb", 0)), *_mig_card("m", 1, ("7g.40gb", 0))]
    single = assemble(alike, _kube("m", {MIG_STRATEGY_LABEL: "single"}))
    assert single.cluster.nodes[0].mig_strategy == "single"
    loads(single.cluster)


def test_a_layout_the_table_refuses_is_left_out_said_so() -> None:
    result = assemble([node_info("m"), *_mig_card("m", 0, ("3g.20gb", 2))])
    assert result.cluster.nodes[0].cards[0].mig == ()
    assert any("3g.20gb may start only at slice 0, 4, not 2" in w for w in result.warnings)
    loads(result.cluster)


def test_no_vgpu_pod_is_placed_on_a_live_mig_card() -> None:
    samples = [node_info("m"), *_mig_card("m", 0, ("7g.40gb", 0))]
    cluster = assemble(samples).cluster
    waiting = Pod("v/a", Request(gpus=1, memory_mib=1024))
    (verdict,) = judge(replace(cluster, pods=(waiting,))).pods
    assert verdict.placement is None


def test_instances_the_exporter_could_not_list_are_none_said_so() -> None:
    """README's metric reference: profile and start are empty when NVML refuses to list the
    card's GPU instances (it needs a privileged caller). The read goes on; the card takes no
    vGPU pod and offers no instance."""
    samples = [node_info("m"), *_mig_card("m", 0, ("", 0))]
    key = {"node": "m", "gpu_index": "0", "gpu_uuid": "GPU-m-0"}
    unlisted = {**key, "GPU_I_ID": "1", "GPU_I_PROFILE": "", "mig_start": ""}
    samples = [s for s in samples if s.metric != MIG_INSTANCE]
    samples.append(Sample(MIG_INSTANCE, unlisted, 4864.0 * MIB))
    result = assemble(samples)
    assert result.cluster.nodes[0].cards[0].mig == ()
    assert any("could not list its GPU instances" in w for w in result.warnings)
    loads(result.cluster)


def _mig_pod(key: str, profile: str, n: int = 1, node: str | None = None, **kw: Any) -> Any:
    return _asking(key, f"nvidia.com/mig-{profile}", n, node, **kw)


def _asking(key: str, resource: str, n: int, node: str | None, **kw: Any) -> Any:
    """A pod asking `n` of `resource`, Running on `node`, else Pending."""
    namespace, name = key.split("/")
    return objects.pod(
        name,
        namespace=namespace,
        node=node,
        phase="Running" if node else "Pending",
        containers=[objects.container(name, limits={resource: n})],
        uid=f"uid-{namespace}-{name}",
        **kw,
    )


def test_a_pod_asking_mig_instances_is_read_as_a_mig_request() -> None:
    pod = parsed(_mig_pod("ml/p", "3g.20gb", 2))
    assert pod.request == Request(gpus=2, memory_mib=0, mig_profile="3g.20gb")
    assert pod.problems == ()
    assert parse_pod(objects.pod("cpu", containers=[objects.container("c")])) is None


def test_a_profile_with_attributes_is_read_from_the_plugins_resource_name() -> None:
    """The device plugin advertises 1g.5gb+me as nvidia.com/mig-1g.5gb.me (a resource name
    allows no `+`: NVIDIA/k8s-device-plugin internal/rm/rm.go)."""
    pod = parsed(_mig_pod("ml/m", "1g.5gb.me"))
    assert pod.request == Request(gpus=1, memory_mib=0, mig_profile="1g.5gb+me")


def test_live_mig_pods_are_judged_on_the_instances() -> None:
    """Bound MIG pods with no GPU process the exporter attributes take the first instances
    of their profile by card, then slice (a guess, said so); a Pending one is judged on what
    is left, and a pod the exporter reports vGPUs for on a MIG card is left out."""
    samples = [
        node_info("m"),
        *_mig_card("m", 0, ("1g.5gb", 0), ("1g.5gb", 1), ("3g.20gb", 4)),
    ]
    pods = (
        parsed(_mig_pod("ml/a", "1g.5gb", node="m", created="2024-05-01T10:00:00Z")),
        parsed(_mig_pod("ml/b", "1g.5gb", node="m", created="2024-05-01T11:00:00Z")),
        parsed(_mig_pod("ml/p", "1g.5gb")),
        parsed(_mig_pod("ml/q", "3g.20gb")),
    )
    kube = KubeState("k", pods, (KubeNode("m", scheduling=NodeScheduling(labels=MIXED)),))
    result = assemble(samples, kube)
    by_name = {p.name: p for p in result.cluster.pods}
    assert by_name["ml/a"].mig_instances == ((0, 0),)
    assert by_name["ml/b"].mig_instances == ((0, 1),)
    assert by_name["ml/p"].placement is None
    assert any("which MIG instance each pod holds is not reported" in w for w in result.warnings)
    loads(result.cluster)
    causes = {d.pod.name: d.cause for d in judge(result.cluster).pods}
    # the two 1g.5gb are held; slices 2..3 are unoccupied, so a re-partition holds one
    assert causes == {"ml/p": "mig-geometry", "ml/q": "schedulable"}


def _gpu_pod(key: str, n: int, node: str | None = None, **kw: Any) -> Any:
    return _asking(key, "nvidia.com/gpu", n, node, **kw)


def test_nvidia_gpu_pods_on_a_single_strategy_node_hold_its_instances() -> None:
    """The device plugin's single strategy advertises a node's MIG instances as
    `nvidia.com/gpu` (NVIDIA/k8s-device-plugin internal/rm/rm.go, AddDefaultResourcesToConfig):
    a pod bound there asking it holds that many instances of the node's one profile. On a
    mixed node the same pod holds no instance (the exporter reports no vGPU for it: warned).
    A Pending one could take x's whole card too: it is judged for whole cards only, said
    so."""
    halves = (("3g.20gb", 0), ("3g.20gb", 4))
    samples = [
        node_info("s"),
        *_mig_card("s", 0, *halves),
        *_mig_card("s", 1, *halves),
        node_info("x"),
        *_mig_card("x", 0, *halves),
        *_mig_card("x", 1, mode=0.0),
    ]
    pods = (
        parsed(_gpu_pod("ml/a", 3, node="s", created="2024-05-01T10:00:00Z")),
        parsed(_gpu_pod("ml/b", 1, node="x")),
        parsed(_gpu_pod("ml/w", 1)),
        parsed(_mig_pod("ml/p", "3g.20gb", 2)),
    )
    nodes = (
        KubeNode("s", scheduling=NodeScheduling(labels={MIG_STRATEGY_LABEL: "single"})),
        KubeNode("x", scheduling=NodeScheduling(labels=MIXED)),
    )
    result = assemble(samples, KubeState("k", pods, nodes))
    by_name = {p.name: p for p in result.cluster.pods}
    a = by_name["ml/a"]
    assert a.request == Request(gpus=3, memory_mib=0, mig_profile="3g.20gb")
    assert a.mig_instances == ((0, 0), (0, 4), (1, 0))
    assert "ml/b" not in by_name
    assert any("vGPU for" in w and "ml/b on x" in w for w in result.warnings)
    (said,) = [w for w in result.warnings if "Pending pods asking nvidia.com/gpu" in w]
    assert "nodes s advertise" in said
    assert said.endswith("instances): ml/w")
    loads(result.cluster)
    # s offers one 3g left (card 1 at 4): ml/p (two) fits only x, whose two are free
    causes = {d.pod.name: (d.cause, d.placement) for d in judge(result.cluster).pods}
    assert causes["ml/p"][0] == "schedulable"
    assert causes["ml/p"][1] is not None
    assert causes["ml/p"][1].node == "x"


def test_where_single_nodes_of_one_profile_are_all_a_pending_nvidia_gpu_pod_asks_them() -> None:
    """Every GPU node single, all of one profile: `nvidia.com/gpu` is those instances only,
    so a Pending pod asking it asks that many of the profile, judged as the device plugin's
    resource ("Insufficient nvidia.com/gpu" where short). A mixed node beside them (whose
    `nvidia.com/mig-<P>` the model would offer such a pod) keeps the whole-card reading."""
    one = (("3g.20gb", 0), ("3g.20gb", 4))
    samples = [
        node_info("s"),
        *_mig_card("s", 0, *one),
        node_info("t"),
        *_mig_card("t", 0, *one),
    ]
    single = NodeScheduling(labels={MIG_STRATEGY_LABEL: "single"})
    pods = (
        parsed(_gpu_pod("ml/a", 1, node="s")),
        parsed(_gpu_pod("ml/p", 2)),
        parsed(_gpu_pod("ml/q", 2)),
    )
    nodes = (KubeNode("s", scheduling=single), KubeNode("t", scheduling=single))
    result = assemble(samples, KubeState("k", pods, nodes))
    assert not any("judged for whole cards only" in w for w in result.warnings)
    by_name = {p.name: p for p in result.cluster.pods}
    assert by_name["ml/p"].request == Request(gpus=2, memory_mib=0, mig_profile="3g.20gb")
    loads(result.cluster)
    verdicts = {d.pod.name: d for d in judge(result.cluster).pods}
    p, q = verdicts["ml/p"], verdicts["ml/q"]
    assert p.cause == "schedulable"
    assert p.placement is not None
    assert p.placement.node == "t"  # s has one left
    assert q.cause == "capacity"
    assert dict(q.reason_counts) == {"Insufficient nvidia.com/gpu": 2}
    # a mixed node beside them: read for whole cards, said so
    mixed = [*samples, node_info("x"), *_mig_card("x", 0, ("7g.40gb", 0))]
    beside = (*nodes, KubeNode("x", scheduling=NodeScheduling(labels=MIXED)))
    other = assemble(mixed, KubeState("k", pods, beside))
    assert any("judged for whole cards only" in w for w in other.warnings)
    assert {p.name: p for p in other.cluster.pods}["ml/p"].request.mig_profile == ""


def test_a_mig_configuration_mig_manager_has_not_applied_is_said() -> None:
    """mig-manager labels the node `nvidia.com/mig.config.state` pending, rebooting, then
    success or failed (NVIDIA/mig-parted deployments/gpu-operator/reconfigure-mig.sh): until
    success, the instances read may change."""
    samples = [node_info("m"), *_mig_card("m", 0, ("7g.40gb", 0))]
    for state, said in (("pending", True), ("failed", True), ("success", False)):
        labels = {
            MIG_STRATEGY_LABEL: "mixed",
            "nvidia.com/mig.config": "all-3g.20gb",
            "nvidia.com/mig.config.state": state,
        }
        result = assemble(samples, _kube("m", labels))
        found = [w for w in result.warnings if "mig.config.state" in w]
        assert bool(found) is said, state
        if said:
            assert found == [
                f"node m: nvidia.com/mig.config.state={state} (nvidia.com/mig.config="
                "all-3g.20gb): mig-manager has not applied the configuration; the MIG "
                "instances modelled may change"
            ]
