"""assemble: exporter samples + Kubernetes pods -> Cluster, with stale data and odd states."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.model import Card, Cluster, Node, Placement, Pod, Request
from advisor.podspec.node import NodeScheduling
from advisor.scenario import scenario_from_data, scenario_to_data
from advisor.sources.assemble import assemble
from advisor.sources.values import COLLECTOR_SUCCESS, KubeNode, KubeState, Sample
from tests.advisor.sources.builders import card, cce_pod, node_info, parsed, vgpu
from tests.fastloop import examples

FRESH = 5.0


def loads(cluster: Cluster) -> None:
    """The assembled cluster is a valid scenario (pods with `invalid` aside)."""
    data = scenario_to_data(cluster)
    data["pods"] = [p for p, pod in zip(data["pods"], cluster.pods, strict=True) if not pod.invalid]
    scenario_from_data(data, "assembled")


def test_vgpus_group_into_pods_with_placements() -> None:
    samples = [
        node_info("n1"),
        *card("n1", 0, mode=1),
        *card("n1", 1, mode=1),
        *card("n1", 2, 32768, model="V100", mode=0),
        # one pod, two containers, each on cards 0 and 1: gpus 2, sums per card
        *vgpu("n1", "ml/a", 0, 2048, 10, container="x"),
        *vgpu("n1", "ml/a", 1, 2048, 10, container="x"),
        *vgpu("n1", "ml/a", 0, 1024, 5, container="y"),
        *vgpu("n1", "ml/a", 1, 1024, 5, container="y"),
        *vgpu("n1", "ml/b", 2, 8192),
    ]
    result = assemble(samples)
    assert result.stale == ()
    assert result.warnings == ()
    (node,) = result.cluster.nodes
    assert node.cards == (
        Card(0, 16384, "Tesla T4", True, "GPU-n1-0"),
        Card(1, 16384, "Tesla T4", True, "GPU-n1-1"),
        Card(2, 32768, "V100", True, "GPU-n1-2"),
    )
    assert result.cluster.pods == (
        Pod("ml/a", Request(gpus=2, memory_mib=6144, core_percent=30), Placement("n1", (0, 1))),
        Pod("ml/b", Request(gpus=1, memory_mib=8192), Placement("n1", (2,))),
    )
    loads(result.cluster)


def test_unhealthy_card_and_mode_disagreement() -> None:
    samples = [
        node_info("n1"),
        *card("n1", 0, healthy=False),
        *card("n1", 1, mode=1),  # says mode 1, but its only vGPU is memory-isolated
        *vgpu("n1", "a/p", 1, 4096),
    ]
    result = assemble(samples)
    assert [c.healthy for c in result.cluster.nodes[0].cards] == [False, True]
    assert result.warnings == (
        "node n1 card 1: gpu_schedule_policy is 1, the modelled vGPUs give mode 0",
    )


def test_stale_series_are_reported_and_left_out_with_what_depends_on_them() -> None:
    samples = [
        node_info("fresh", FRESH),
        *card("fresh", 0, age=FRESH),
        *card("fresh", 1, age=FRESH),
        *vgpu("fresh", "a/ok", 0, 4096, age=FRESH),
        *vgpu("fresh", "a/old", 1, 4096, age=400.0),  # its pod's series stopped
        node_info("gone", 900.0),
        *card("gone", 0, age=900.0),
        *vgpu("gone", "a/there", 0, 4096, age=900.0),
        node_info("vanished", 20.0, ended=True),  # young, but its target is gone
        *card("vanished", 0, age=20.0),
    ]
    result = assemble(samples, stale_after_s=300)
    assert [n.name for n in result.cluster.nodes] == ["fresh"]
    assert [p.name for p in result.cluster.pods] == ["a/ok"]
    assert [str(s) for s in result.stale] == [
        "pod a/old on node fresh: xgpu_memory_total last sample 400s ago",
        "node gone: xgpu_node_info last sample 900s ago",
        "node vanished: xgpu_node_info series ended 20s ago",
    ]
    loads(result.cluster)


def test_fresh_twin_of_a_stale_series_speaks_for_the_node() -> None:
    samples = [node_info("n1", 900.0), node_info("n1", FRESH), *card("n1", 0, age=FRESH)]
    result = assemble(samples, stale_after_s=60)
    assert [n.name for n in result.cluster.nodes] == ["n1"]
    assert result.stale == ()


def test_card_without_memory_reading() -> None:
    samples = [
        node_info("n1"),
        *card("n1", 0, None),  # lost, with a vGPU on it: unavailable, sized by allotments
        *card("n1", 1, None),  # lost, empty: left out
        *card("n1", 2),
        *vgpu("n1", "a/p", 0, 6144),
    ]
    result = assemble(samples)
    assert result.cluster.nodes[0].cards == (
        Card(0, 6144, "Tesla T4", False, "GPU-n1-0"),
        Card(2, 16384, "Tesla T4", True, "GPU-n1-2"),
    )
    assert [p.name for p in result.cluster.pods] == ["a/p"]
    assert "node n1 card 1: memory size unknown and nothing allotted; left out" in result.warnings
    loads(result.cluster)


def test_what_the_model_cannot_hold_is_left_out_with_a_warning() -> None:
    samples = [
        node_info("n1"),
        *card("n1", 0, 16384),
        *card("n1", 1, 16384),
        *card("n1", 2, 8192),
        *card("n1", 3, 16384),
        # uneven over its cards
        *vgpu("n1", "a/uneven", 0, 4096),
        *vgpu("n1", "a/uneven", 1, 2048),
        # card 3: mixed modes, and core over 100 %
        *vgpu("n1", "b/core", 3, 1024, 60),
        *vgpu("n1", "b/memory-only", 3, 1024),
        *vgpu("n1", "b/more-core", 3, 1024, 60),
        # card 2: overcommitted memory
        *vgpu("n1", "c/big", 2, 6144),
        *vgpu("n1", "c/bigger", 2, 6144),
    ]
    result = assemble(samples)
    names = [p.name for p in result.cluster.pods]
    assert names == ["b/core", "c/big", "c/bigger"]
    assert result.cluster.nodes[0].cards[2].memory_mib == 12288
    text = "\n".join(result.warnings)
    assert "pod a/uneven on node n1: not split evenly" in text
    assert "pod b/memory-only: node n1 card 3 mixes isolation modes" in text
    assert "pod b/more-core: node n1 card 3 has more than 100% core allotted" in text
    assert "node n1 card 2: 12288 MiB allotted of 8192 (overcommit?)" in text
    loads(result.cluster)


def test_vgpu_limit_grows_to_what_runs() -> None:
    samples = [node_info("n1"), *card("n1", 0)]
    for i in range(3):
        samples += vgpu("n1", f"a/p{i}", 0, 1024)
    result = assemble(samples, max_vgpus_per_card=2)
    assert result.cluster.max_vgpus_per_card == 3
    loads(result.cluster)


def test_failing_collectors_and_unlabelled_series_are_warned_about() -> None:
    samples = [
        node_info("n1"),
        *card("n1", 0),
        Sample(COLLECTOR_SUCCESS, {"node": "n1", "collector": "kubernetes"}, 0.0),
        Sample(COLLECTOR_SUCCESS, {"node": "n1", "collector": "nvml"}, 1.0),
        Sample("xgpu_card_info", {"gpu_index": "0"}, 1.0),
    ]
    warnings = assemble(samples).warnings
    assert any("exporter collector kubernetes failing" in w for w in warnings)
    assert any("1 series without a node label" in w for w in warnings)


def test_empty_input_is_an_empty_cluster() -> None:
    result = assemble([], KubeState("kubernetes test"))
    assert result.cluster.nodes == ()
    assert result.cluster.pods == ()
    loads(result.cluster)


def kube_cluster() -> tuple[list[Sample], KubeState]:
    samples = [
        node_info("n1"),
        *card("n1", 0),
        *card("n1", 1),
        node_info("n2"),
        *card("n2", 0),
        *vgpu("n1", "ml/train", 0, 8192),
        *vgpu("n1", "ml/orphan", 1, 1024),
    ]
    noisy = {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "team": "ml"}
    malformed = cce_pod("web/broken", created="2024-05-01T10:00:05Z")
    malformed["spec"]["containers"][0]["resources"]["limits"]["volcano.sh/gpu-mem.128Mi"] = "lots"
    pods = [
        cce_pod(
            "ml/train",
            memory_mib=8192,
            node="n1",
            cards=(0,),
            priority=50,
            owner=("Job", "train"),
            annotations=noisy,
        ),
        cce_pod("web/late", created="2024-05-01T10:00:09Z"),
        cce_pod("web/early", created="2024-05-01T10:00:01Z", priority=7),
        malformed,
        cce_pod("ml/unseen", node="n2", cards=(0,)),  # bound, but no exporter reports it
    ]
    nodes = (
        KubeNode("n1", unavailable="not Ready"),
        KubeNode("n2", scheduling=NodeScheduling(unschedulable=True)),  # cordoned
        KubeNode("n3", advertises_gpus=True),
    )
    return samples, KubeState("kubernetes test", tuple(parsed(p) for p in pods), nodes)


def test_kubernetes_adds_pending_pods_and_enriches_running_ones() -> None:
    samples, kube = kube_cluster()
    result = assemble(samples, kube)
    pods = {p.name: p for p in result.cluster.pods}
    train = pods["ml/train"]
    assert (train.priority, train.owner) == (50, "Job/ml/train")
    assert dict(train.annotations) == {"team": "ml", "volcano.sh/gpu-index": "0"}
    # Pending in creation order; the unreadable one is invalid, not an error
    assert [p.name for p in result.cluster.pending] == ["web/early", "web/broken", "web/late"]
    assert pods["web/early"].priority == 7
    assert pods["web/early"].request == Request(gpus=1, memory_mib=4096)
    assert pods["web/broken"].invalid is not None
    assert "volcano.sh/gpu-mem.128Mi" in pods["web/broken"].invalid
    # A node not Ready: its cards take nothing new. A cordoned one is `unschedulable`, which
    # kube-scheduler's own filter judges (a pod tolerating the cordon may still go there).
    n1, n2 = result.cluster.nodes
    assert ([c.healthy for c in n1.cards], n1.unschedulable) == ([False, False], False)
    assert ([c.healthy for c in n2.cards], n2.unschedulable) == ([True], True)
    text = "\n".join(result.warnings)
    assert "unknown to Kubernetes (deleted?): ml/orphan" in text
    assert "no exporter reports a vGPU for" in text
    assert "ml/unseen on n2" in text
    assert "GPU nodes without exporter series (not modelled): n3" in text
    assert "modelled with unavailable cards: n1 (not Ready)" in text
    assert "n2" not in text.split("modelled with unavailable cards:")[1].split("\n")[0]
    loads(result.cluster)


def test_a_pod_kubernetes_has_pending_again_replaces_the_exporters_view() -> None:
    samples = [node_info("n1"), *card("n1", 0), *vgpu("n1", "ml/sts-0", 0, 4096)]
    kube = KubeState("k", (parsed(cce_pod("ml/sts-0")),), (KubeNode("n1"),))
    result = assemble(samples, kube)
    (pod,) = result.cluster.pods
    assert pod.placement is None
    assert any("re-created?" in w for w in result.warnings)


# Any mix of cards and vGPUs, stale or not, assembles into a cluster that loads.
vgpu_specs = st.tuples(
    st.sampled_from(["n1", "n2"]),
    st.sampled_from(["a/p", "a/q", "b/r", "b/s"]),
    st.integers(0, 3),
    st.sampled_from([0, 100, 1024, 4096, 20000]),
    st.sampled_from([0, 5, 50, 70]),
    st.sampled_from([None, 10.0, 1000.0]),
)


@settings(max_examples=examples(150), deadline=None)
@given(
    cards=st.lists(
        st.tuples(
            st.sampled_from(["n1", "n2"]),
            st.integers(0, 3),
            st.sampled_from([None, 1024, 16384]),
            st.booleans(),
        ),
        max_size=8,
    ),
    vgpus=st.lists(vgpu_specs, max_size=12),
)
def test_any_live_state_assembles_into_a_loadable_cluster(
    cards: list[tuple[str, int, int | None, bool]],
    vgpus: list[tuple[str, str, int, int, int, float | None]],
) -> None:
    samples = [node_info("n1"), node_info("n2", 1000.0)]
    for node, index, memory, healthy in cards:
        samples += card(node, index, memory, healthy=healthy)
    for node, pod, index, memory, core, age in vgpus:
        samples += vgpu(node, pod, index, memory, core, age=age)
    result = assemble(samples, max_vgpus_per_card=2)
    loads(result.cluster)
    assert all(n.name != "n2" for n in result.cluster.nodes)  # stale node left out
    modelled: list[Node] = list(result.cluster.nodes)
    assert all(n.cards for n in modelled)
