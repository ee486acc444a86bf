"""Live HAMi and Volcano vGPU clusters: the real kubernetes_asyncio client against the API
double, through assemble, the diagnosis and `xgpu-advisor snapshot` (exit 2 on mixed marks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.diagnose import diagnose
from advisor.core.model import Card, Placement, Policy, Request, Scheduler
from advisor.errors import InputError
from advisor.podspec.registration import HAMI_REGISTER, VOLCANO_REGISTER
from advisor.scenario import load_scenario, scenario_from_data, scenario_to_data
from advisor.sources.assemble import assemble
from advisor.sources.kubernetes import read_kubernetes
from advisor.sources.values import Sample
from tests.advisor.sources.builders import card, cce_pod, node_info, per_card_pod, vgpu
from tests.advisor.sources.pages_server import serving_exporters
from tests.kubeapi import objects
from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.store import KubeStore
from tests.kubeapi.threaded import KubeApiThread

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]

GPU, PCT, CORES = "nvidia.com/gpu", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"


def register(*devices: tuple[str, int, int, int]) -> str:
    """HAMi v2.10's MarshalNodeDevices: (UUID, index, MiB, NUMA) with 10 slots each."""
    return json.dumps(
        [
            {"id": u, "index": i, "count": 10, "devmem": m, "devcore": 100, "type": "NVIDIA-T4"}
            | ({"numa": numa} if numa else {})  # omitempty, as Go writes it
            | {"health": True}
            for u, i, m, numa in devices
        ]
    )


def populate_hami(api: KubeStore) -> None:
    """n1: two 16 GiB cards on NUMA 0 and 1, card 0 held whole by ml/whole; n2: one 24 GiB
    card with a quarter taken by ml/share. Pending: half a card, then two whole cards."""
    n1 = register(("GPU-n1-0", 0, 16384, 0), ("GPU-n1-1", 1, 16384, 1))
    n2 = register(("GPU-n2-0", 0, 24576, 0))
    for name, value in (("n1", n1), ("n2", n2)):
        api.add_node(objects.node(name, allocatable={GPU: 20}, annotations={HAMI_REGISTER: value}))
    api.add_pod(
        per_card_pod(
            "ml/whole", {GPU: 1, CORES: 100}, node="n1", allocated=(("GPU-n1-0", 16384, 100),)
        )
    )
    api.add_pod(
        per_card_pod("ml/share", {GPU: 1, PCT: 25}, node="n2", allocated=(("GPU-n2-0", 6144, 0),))
    )
    api.add_pod(per_card_pod("ml/half", {GPU: 1, PCT: 50}, created="2024-05-01T10:00:01Z"))
    api.add_pod(per_card_pod("ml/pair", {GPU: 2}, created="2024-05-01T10:00:02Z"))


def hami_samples() -> list[Sample]:
    return [
        node_info("n1"),
        *card("n1", 0),
        *card("n1", 1),
        node_info("n2"),
        *card("n2", 0, 24576),
        *vgpu("n1", "ml/whole", 0, 16384, 100),
        *vgpu("n2", "ml/share", 0, 6144),
    ]


async def test_a_hami_cluster_is_read_as_hami(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    populate_hami(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert {n.name: dict(n.registrations) for n in state.nodes}["n2"] == {
        HAMI_REGISTER: register(("GPU-n2-0", 0, 24576, 0))
    }
    result = assemble(hami_samples(), state)
    assert result.warnings == ()
    cluster = result.cluster
    assert (cluster.scheduler, cluster.policy, cluster.max_vgpus_per_card) == (
        Scheduler("hami"),
        Policy("binpack", "spread"),
        10,
    )
    assert cluster.nodes[0].cards == (
        Card(0, 16384, "Tesla T4", True, "GPU-n1-0", numa=0, max_vgpus=10),
        Card(1, 16384, "Tesla T4", True, "GPU-n1-1", numa=1, max_vgpus=10),
    )
    pods = {p.name: p for p in cluster.pods}
    assert pods["ml/whole"].request == Request(gpus=1, memory_mib=0, core_percent=100)
    assert pods["ml/share"].request == Request(gpus=1, memory_mib=0, memory_percent=25)
    assert [(p.name, p.request, p.invalid) for p in cluster.pending] == [
        ("ml/half", Request(gpus=1, memory_mib=0, memory_percent=50), None),
        ("ml/pair", Request(gpus=2, memory_mib=0), None),
    ]
    # Node scores before placement (HAMi's ComputeDefaultScore, weights 1):
    # n1 10 * (1/20 + 100/200 + 16384/32768) = 10.5, n2 10 * (1/10 + 0 + 6144/24576) = 3.5;
    # binpack takes n1, where only card 1 is free.
    verdicts = {d.pod.name: d for d in diagnose(cluster).pods}
    assert verdicts["ml/half"].cause == "schedulable"
    assert verdicts["ml/half"].placement == Placement("n1", (1,))
    assert verdicts["ml/pair"].cause != "schedulable"
    # The snapshot keeps all of it: profile, registered cards, shares and whole cards.
    again = scenario_from_data(scenario_to_data(cluster), "snapshot.yaml")
    assert again == cluster


def populate_volcano(api: KubeStore) -> None:
    value = "GPU-n1-0,4,16384,T4,true,hami-core:GPU-n1-1,4,16384,T4,true,hami-core:"
    api.add_node(
        objects.node(
            "n1", allocatable={"volcano.sh/vgpu-number": 8}, annotations={VOLCANO_REGISTER: value}
        )
    )
    limits: dict[str, str | int] = {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 4096}
    allocated = (("GPU-n1-0", 4096, 0),)
    api.add_pod(
        per_card_pod(
            "ml/a", limits, node="n1", allocated=allocated, allocation="volcano.sh/vgpu-ids-new"
        )
    )
    api.add_pod(per_card_pod("ml/b", {"volcano.sh/vgpu-number": 1}))


async def test_a_volcano_vgpu_cluster_is_read_as_volcano(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate_volcano(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    samples = [node_info("n1"), *card("n1", 0), *card("n1", 1), *vgpu("n1", "ml/a", 0, 4096)]
    result = assemble(samples, state)
    assert result.warnings == ()
    cluster = result.cluster
    assert (cluster.scheduler, cluster.policy) == (
        Scheduler("volcano-vgpu"),
        Policy("binpack", "legacy"),
    )
    assert [c.max_vgpus for c in cluster.nodes[0].cards] == [4, 4]
    # A whole card: the legacy walk n-1 .. 0 takes card 1 first, and it is free.
    (verdict,) = diagnose(cluster).pods
    assert (verdict.cause, verdict.placement) == ("schedulable", Placement("n1", (1,)))
    assert scenario_from_data(scenario_to_data(cluster), "snapshot.yaml") == cluster


async def test_mixed_marks_are_an_input_error(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    populate_hami(kube_api)
    kube_api.add_pod(cce_pod("web/cce", node="n1", cards=(1,)))
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    with pytest.raises(InputError) as caught:
        assemble(hami_samples(), state)
    assert str(caught.value) == (
        "--scheduler auto: pods carry both hami.io/vgpu-devices-allocated (hami, e.g. "
        "ml/share) and volcano.sh/gpu-index (cce, e.g. web/cce); pass --scheduler to choose"
    )
    # Named, the profile stands and the other scheduler's pod is read as it can be.
    assert assemble(hami_samples(), state, scheduler="hami").cluster.scheduler.profile == "hami"


# -- `xgpu-advisor snapshot`, end to end -------------------------------------------------


@pytest.fixture
def exporters() -> Iterator[str]:
    """Stand-in exporters answering /n1 and /n2 with each node's exposition; the URL list."""
    with serving_exporters(hami_samples(), ("n1", "n2")) as urls:
        yield urls


def test_snapshot_of_a_hami_cluster_loads_back_as_hami(
    kube_api_thread: KubeApiThread,
    exporters: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kube_api_thread.call(populate_hami, kube_api_thread.api)
    kubeconfig = kube_api_thread.api.write_kubeconfig(tmp_path / "kubeconfig")
    out = tmp_path / "snapshot.yaml"
    args = ["snapshot", "--exporters", exporters, "--kubeconfig", str(kubeconfig)]
    assert main([*args, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # no warning: only the summary
    assert err.endswith(
        "2 nodes, 3 cards, 2 running pods and 2 Pending pods; "
        "scheduler hami (auto: hami.io/vgpu-devices-allocated on 2 pods)\n"
    )
    text = out.read_text()
    assert "scheduler: {profile: hami}" in text
    snapshot = load_scenario(out)
    assert snapshot.scheduler == Scheduler("hami")
    assert snapshot.policy == Policy("binpack", "spread")
    assert [c.numa for n in snapshot.nodes for c in n.cards] == [0, 1, 0]
    assert {p.name: p.request.memory_percent for p in snapshot.pods} == {
        "ml/whole": 0,
        "ml/share": 25,
        "ml/half": 50,
        "ml/pair": 0,
    }
    # A named profile with a policy of its own, and the card order Volcano alone has.
    assert main([*args, "--output", str(out), "--scheduler", "cce"]) == 0
    assert load_scenario(out).scheduler == Scheduler("cce")
    assert capsys.readouterr().err.endswith("; scheduler cce (--scheduler)\n")
    capsys.readouterr()
    assert main([*args, "--output", str(out), "--card-policy", "legacy"]) == 2
    assert capsys.readouterr().err == (
        "xgpu-advisor: error: --card-policy legacy is not a card policy of hami "
        "(one of binpack, spread)\n"
    )


def test_snapshot_of_mixed_marks_exits_2_naming_both(
    kube_api_thread: KubeApiThread,
    exporters: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def mixed(api: KubeStore) -> None:
        populate_hami(api)
        api.add_pod(cce_pod("web/cce", node="n1", cards=(1,)))

    kube_api_thread.call(mixed, kube_api_thread.api)
    kubeconfig = kube_api_thread.api.write_kubeconfig(tmp_path / "kubeconfig")
    out = tmp_path / "snapshot.yaml"
    code = main(
        [
            "snapshot",
            "--exporters",
            exporters,
            "--kubeconfig",
            str(kubeconfig),
            "--output",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "xgpu-advisor: error: --scheduler auto: pods carry both hami.io/vgpu-devices-allocated "
        "(hami, e.g. ml/share) and volcano.sh/gpu-index (cce, e.g. web/cce); "
        "pass --scheduler to choose\n"
    )
    assert not out.exists()
