"""The cluster of test_kube_serving.py: pods of gpu-node-1 in each dialect, the fake cards and
processes, the cgroups that tie the processes to the pods' containers, and the vGPU series
that follow from them (label values -> allotted bytes).

Cards 0-1 hold a CCE pod (memory isolation), card 2 a Volcano vGPU pod, card 3 a HAMi pod
(memory+core). `hami_late()` is added by the tests; its process runs from the start.
"""

from __future__ import annotations

from tests.exporter.fakenvml.state import FakeCard, FakeProcess, FakeSample, FakeState
from tests.kubeapi import objects
from tests.kubeapi.objects import JsonObject

NODE = "gpu-node-1"
GIB, MIB = 1024**3, 1024**2
UUID = {
    i: f"GPU-{str(i) * 8}-{str(i) * 4}-{str(i) * 4}-{str(i) * 4}-{str(i) * 12}" for i in range(4)
}
HAMI = "hami.io/vgpu-devices-allocated"
VOLCANO = "volcano.sh/vgpu-ids-new"
CCE = "volcano.sh/gpu-index"
Labels = tuple[str, ...]


def hami_limits(memory_mib: int, cores: int) -> dict[str, int]:
    return {"nvidia.com/gpu": 1, "nvidia.com/gpumem": memory_mib, "nvidia.com/gpucores": cores}


def cce_train() -> JsonObject:
    """CCE: 64 x 128 MiB and no core over the label's 2 cards, which the annotation indexes."""
    return objects.pod(
        "cce-train",
        namespace="team-a",
        node=NODE,
        uid="11111111-1111-4111-8111-111111111111",
        labels={"volcano.sh/gpu-num": "2"},
        annotations={CCE: "0,1"},
        containers=[objects.container("train", limits={"volcano.sh/gpu-mem.128Mi": 64})],
    )


def vc_infer(memory_mib: int = 2048) -> JsonObject:
    """Volcano vGPU: per-card memory and core, the card's UUID in the annotation."""
    limits = {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": memory_mib}
    return objects.pod(
        "vc-infer",
        namespace="team-b",
        node=NODE,
        uid="22222222-2222-4222-8222-222222222222",
        annotations={VOLCANO: f"{UUID[2]},NVIDIA,{memory_mib},30:"},
        containers=[objects.container("infer", limits={**limits, "volcano.sh/vgpu-cores": 30})],
    )


def hami_svc() -> JsonObject:
    """HAMi: one entry per container (the sidecar's is empty), cri-o as the runtime."""
    return objects.pod(
        "hami-svc",
        namespace="team-c",
        node=NODE,
        uid="33333333-3333-4333-8333-333333333333",
        runtime="cri-o",
        annotations={HAMI: f"{UUID[3]},NVIDIA,3000,20:;;"},
        containers=[
            objects.container("svc", limits=hami_limits(3000, 20)),
            objects.container("log-shipper"),
        ],
    )


def hami_late() -> JsonObject:
    """Added while the exporter runs; its process (pid 3400) is on card 3 from the start."""
    return objects.pod(
        "hami-late",
        namespace="team-c",
        node=NODE,
        uid="44444444-4444-4444-8444-444444444444",
        annotations={HAMI: f"{UUID[3]},NVIDIA,1000,10:;"},
        containers=[objects.container("worker", limits=hami_limits(1000, 10))],
    )


def elsewhere() -> JsonObject:
    return objects.pod(
        "elsewhere",
        namespace="team-c",
        node="gpu-node-2",
        annotations={HAMI: f"{UUID[3]},NVIDIA,5000,50:;"},
        containers=[objects.container("svc", limits=hami_limits(5000, 50))],
    )


def finished() -> JsonObject:
    """A Succeeded pod still bound to this node: its containers are gone, so it holds nothing."""
    return objects.pod(
        "done-job",
        namespace="team-b",
        node=NODE,
        phase="Succeeded",
        annotations={VOLCANO: f"{UUID[2]},NVIDIA,4096,50:"},
        containers=[
            objects.container(
                "job",
                limits={"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 4096},
            )
        ],
    )


def initial_pods() -> list[JsonObject]:
    return [cce_train(), vc_infer(), hami_svc(), elsewhere(), finished()]


def cid(namespace: str, pod: str, container: str) -> str:
    return objects.container_id(namespace, pod, container)


def uid_(uid: str) -> str:  # the systemd cgroup driver's spelling
    return uid.replace("-", "_")


CGROUPS = {
    # cce-train on cards 0 and 1: cgroup v2, systemd driver, containerd
    1100: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
    f"{uid_('11111111-1111-4111-8111-111111111111')}.slice/"
    f"cri-containerd-{cid('team-a', 'cce-train', 'train')}.scope\n",
    # vc-infer: cgroup v1, cgroupfs driver
    2200: "12:memory:/kubepods/burstable/pod22222222-2222-4222-8222-222222222222/"
    f"{cid('team-b', 'vc-infer', 'infer')}\n11:pids:/kubepods\n",
    # hami-svc: cri-o
    3300: "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
    f"{uid_('33333333-3333-4333-8333-333333333333')}.slice/"
    f"crio-{cid('team-c', 'hami-svc', 'svc')}.scope\n",
    # hami-late: unattributed until its pod appears
    3400: f"0::/kubepods.slice/cri-containerd-{cid('team-c', 'hami-late', 'worker')}.scope\n",
    # a host process
    9900: "0::/system.slice/render-farm.service\n",
}


def nvml_state() -> FakeState:
    return FakeState(
        cards=[FakeCard(UUID[i], mem_used=(i + 2) * GIB, util=10 * (i + 1)) for i in range(4)],
        processes=[
            FakeProcess(0, 1100, GIB),
            FakeProcess(1, 1100, 2 * GIB),
            FakeProcess(2, 2200, 1536 * MIB),
            FakeProcess(3, 3300, 700 * MIB),
            FakeProcess(3, 3400, 300 * MIB),
            FakeProcess(0, 9900, 256 * MIB),
        ],
        samples=[
            FakeSample(0, 1100, 15),
            FakeSample(1, 1100, 25),
            FakeSample(2, 2200, 12),
            FakeSample(3, 3300, 8),
            FakeSample(3, 3400, 5),
        ],
    )


CCE_TRAIN: dict[Labels, int] = {
    ("team-a", "cce-train", "train", "0", UUID[0]): 4096 * MIB,
    ("team-a", "cce-train", "train", "1", UUID[1]): 4096 * MIB,
}
VC_INFER: dict[Labels, int] = {("team-b", "vc-infer", "infer", "2", UUID[2]): 2048 * MIB}
HAMI_SVC: dict[Labels, int] = {("team-c", "hami-svc", "svc", "3", UUID[3]): 3000 * MIB}
HAMI_LATE: dict[Labels, int] = {("team-c", "hami-late", "worker", "3", UUID[3]): 1000 * MIB}
BASELINE = CCE_TRAIN | VC_INFER | HAMI_SVC
