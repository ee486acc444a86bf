"""Pod allotments from a scenario file (docs/design.md §4), for hosts without Kubernetes.

Each running pod on this node gets one allotment per placed card: memory M/N, core T/N
(None when T is 0: memory isolation). Under hami and volcano-vgpu a share of the card or a
whole card is allotted as those schedulers account it: the card's memory times the share
(HAMi and Volcano round down), or all of it. A scenario names no containers or runtime ids, so
optional pod annotations supply them for attribution:
`xgpu.io/container` (default: the pod's name), `xgpu.io/pod-uid` (default: a UUID derived
from the pod's name, stable across runs) and `xgpu.io/container-id`.
A bound MIG pod (docs/design.md §13) holds GPU instances, no vGPU: it gets no allotment (as
from the Kubernetes API), only a `MigHold` per instance, which the simulator reads, and a
`MigContainer` (named as above), to which its processes on the instances are attributed.
The file is re-read when it changes; a broken edit keeps the last good view (ok=False).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import replace
from pathlib import Path

import numpy as np

from advisor.core.model import Cluster, Pod
from advisor.core.profiles import profile_of
from advisor.core.state import Shape
from advisor.scenario import ScenarioError, load_scenario
from exporter.allotments import Allotment, MigContainer, MigHold, PodsView

log = logging.getLogger("xgpu.exporter.scenario")

MIB = 1024 * 1024
_UID_NAMESPACE = uuid.UUID("6f1d7c52-3f0e-4a55-9b1c-1c7e0b8f4a11")


def pod_uid(pod: Pod) -> str:
    return pod.annotations.get("xgpu.io/pod-uid") or str(uuid.uuid5(_UID_NAMESPACE, pod.name))


def container_name(pod: Pod) -> str:
    """The `xgpu.io/container` annotation, else the workload's name (replicas of one
    workload share their container names, as in Kubernetes), else the pod's."""
    named = pod.annotations.get("xgpu.io/container")
    if named:
        return named
    if pod.owner:
        return pod.owner.rsplit("/", 1)[-1]
    return pod.name.rpartition("/")[2]


def allotments_from_cluster(cluster: Cluster, node: str) -> tuple[Allotment, ...]:
    rules = profile_of(cluster.scheduler)
    cards = {c.index: c for n in cluster.nodes if n.name == node for c in n.cards}
    found: list[Allotment] = []
    for pod in cluster.running:
        if pod.placement is None or pod.placement.node != node or pod.invalid:
            continue
        if pod.request.mig_profile:
            continue  # instances, not a vGPU: `mig_holds_from_cluster`
        namespace, _, name = pod.name.rpartition("/")
        shape = Shape.of(pod.request)
        for index in pod.placement.cards:
            card = cards.get(index)
            capacity = np.array([card.memory_mib if card is not None else 0], dtype=np.int64)
            memory_mib = int(rules.card_need(capacity, shape)[0])
            found.append(
                Allotment(
                    namespace=namespace,
                    pod=name,
                    container=container_name(pod),
                    card=str(index),
                    memory_bytes=memory_mib * MIB,
                    core_percent=rules.card_core(shape) or None,
                    pod_uid=pod_uid(pod),
                    container_id=pod.annotations.get("xgpu.io/container-id", ""),
                )
            )
    return tuple(found)


def mig_containers_from_cluster(cluster: Cluster, node: str) -> tuple[MigContainer, ...]:
    """The container of each bound pod on `node` that holds MIG instances."""
    found: list[MigContainer] = []
    for pod in cluster.running:
        if pod.placement is None or pod.placement.node != node or pod.invalid:
            continue
        if pod.mig_instances:
            namespace, _, name = pod.name.rpartition("/")
            container_id = pod.annotations.get("xgpu.io/container-id", "")
            found.append(
                MigContainer(namespace, name, container_name(pod), pod_uid(pod), container_id)
            )
    return tuple(found)


def mig_holds_from_cluster(cluster: Cluster, node: str) -> tuple[MigHold, ...]:
    """The MIG instances the bound pods on `node` hold, one `MigHold` each."""
    found: list[MigHold] = []
    for pod in cluster.running:
        if pod.placement is None or pod.placement.node != node or pod.invalid:
            continue
        namespace, _, name = pod.name.rpartition("/")
        container_id = pod.annotations.get("xgpu.io/container-id", "")
        found += [
            MigHold(namespace, name, card, start, pod_uid(pod), container_id)
            for card, start in pod.mig_instances
        ]
    return tuple(found)


class ScenarioPodSource:
    """A `PodSource` over one scenario file; `load()` raises ScenarioError on a bad file."""

    name = "scenario"

    def __init__(self, path: Path, node: str, poll_s: float = 2.0) -> None:
        self.path = path
        self.node = node
        self.poll_s = poll_s
        self._view = PodsView(allotments=(), ok=False, error="not loaded yet")
        self._holds: tuple[MigHold, ...] = ()
        self._mtime_ns: int | None = None
        self._task: asyncio.Task[None] | None = None

    def load(self) -> Cluster:
        """Read the file now (blocking); on success the view changes to it."""
        mtime = self.path.stat().st_mtime_ns
        cluster = load_scenario(self.path)
        self._view = PodsView(
            allotments=allotments_from_cluster(cluster, self.node),
            ok=True,
            mig_containers=mig_containers_from_cluster(cluster, self.node),
        )
        self._holds = mig_holds_from_cluster(cluster, self.node)
        self._mtime_ns = mtime
        return cluster

    async def start(self) -> None:
        if self._mtime_ns is None:
            await asyncio.to_thread(self.load)
        self._task = asyncio.create_task(self._watch(), name="scenario-watch")

    def view(self) -> PodsView:
        return self._view

    def mig_holds(self) -> tuple[MigHold, ...]:
        """The MIG instances held, as of the last good read (the simulator's)."""
        return self._holds

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            try:
                mtime = self.path.stat().st_mtime_ns
                if mtime == self._mtime_ns:
                    continue
                self._mtime_ns = mtime  # a broken edit is reported once, not every poll
                await asyncio.to_thread(self.load)
                log.info("scenario reloaded", extra={"path": str(self.path)})
            except (OSError, ScenarioError) as exc:
                self._view = replace(self._view, ok=False, error=str(exc))
                log.warning("scenario reload failed", extra={"error": str(exc)})
