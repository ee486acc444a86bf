"""Process -> container attribution from cgroup files, as each runtime writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.attribution import Owner, ProcCgroupResolver, owner_from_cgroup, owner_from_path

CID = "4b1e2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
UID = "0f0e0d0c-0b0a-0908-0706-050403020100"
UID_SYSTEMD = UID.replace("-", "_")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # cgroup v2, systemd driver: containerd, cri-o, docker (cri-dockerd)
        (
            f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_SYSTEMD}.slice/"
            f"cri-containerd-{CID}.scope",
            Owner(CID, UID),
        ),
        (
            f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_SYSTEMD}.slice/"
            f"crio-{CID}.scope",
            Owner(CID, UID),
        ),
        (
            f"/kubepods.slice/kubepods-pod{UID_SYSTEMD}.slice/docker-{CID}.scope",
            Owner(CID, UID),
        ),
        # cgroupfs driver (v1 and v2): bare ids
        (f"/kubepods/burstable/pod{UID}/{CID}", Owner(CID, UID)),
        (f"/kubepods/pod{UID}/{CID}", Owner(CID, UID)),
        # static pods carry a 32-hex hash as UID
        (f"/kubepods/besteffort/pod{'a' * 32}/{CID}", Owner(CID, "a" * 32)),
        # the pod's slice only (e.g. a process in the pod cgroup itself)
        (
            f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_SYSTEMD}.slice",
            Owner("", UID),
        ),
        # plain docker, no Kubernetes
        (f"/docker/{CID}", Owner(CID, "")),
        (f"/system.slice/docker-{CID}.scope", Owner(CID, "")),
    ],
)
def test_owner_from_path_knows_each_runtime_layout(path: str, expected: Owner) -> None:
    assert owner_from_path(path) == expected


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/user.slice/user-0.slice/session-1.scope",
        "/system.slice/containerd.service",
        f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_SYSTEMD}.slice/"
        f"crio-conmon-{CID}.scope",  # cri-o's monitor is not the container
    ],
)
def test_host_processes_have_no_container(path: str) -> None:
    owner = owner_from_path(path)
    assert owner is None or owner.container_id == ""


def test_cgroup_v1_file_prefers_the_line_naming_both() -> None:
    text = "\n".join(
        [
            "12:pids:/user.slice",
            f"11:memory:/kubepods/burstable/pod{UID}/{CID}",
            f"10:cpu,cpuacct:/kubepods/burstable/pod{UID}/{CID}",
            "0::/",
        ]
    )
    assert owner_from_cgroup(text) == Owner(CID, UID)


def test_cgroup_v2_file_and_garbage() -> None:
    assert owner_from_cgroup(f"0::/kubepods/pod{UID}/{CID}\n") == Owner(CID, UID)
    assert owner_from_cgroup("0::/init.scope\n") is None
    assert owner_from_cgroup("not a cgroup file") is None
    assert owner_from_cgroup("") is None


def test_resolver_reads_a_proc_tree(tmp_path: Path) -> None:
    (tmp_path / "100").mkdir()
    (tmp_path / "100" / "cgroup").write_text(f"0::/kubepods/pod{UID}/{CID}\n")
    (tmp_path / "200").mkdir()
    (tmp_path / "200" / "cgroup").write_text("0::/user.slice\n")
    resolver = ProcCgroupResolver(tmp_path)
    # 300 vanished between NVML's answer and ours: simply no owner
    assert resolver.owners([100, 200, 300]) == {100: Owner(CID, UID)}


def test_resolver_without_procfs_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ProcCgroupResolver(tmp_path / "missing").owners([1])
