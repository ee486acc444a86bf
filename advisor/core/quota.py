"""HAMi's namespace quotas in the simulated cycle (docs/design.md §10.2), for the profiles
whose session says so (`SessionRules.device_quota`: hami).

Read from HAMi v2.10.0 (Project-HAMi/HAMi, tag v2.10.0):

- pkg/device/quota.go, addQuotaLocked and managedQuotaName: a ResourceQuota's `spec.hard`
  keys `limits.<memory resource>` and `limits.<core resource>` (nvidia.com/gpumem,
  nvidia.com/gpucores) set the namespace's limits; `requests.*` keys are not read. An
  explicit 0 blocks every use (LimitSet).
- AddUsage / countPodDevices: a namespace's use is the memory (MiB) and cores of every card
  its pods hold, summed over the cards.
- pkg/device/nvidia/device.go, Fit and fitQuota: before the memory check of each card, the
  pod's cards chosen so far plus this one must keep use + asked ≤ limit (FitQuota), else the
  card is refused with reason ResourceQuotaNotFit. The sum grows with each card, so a pod
  fits its quota only if use + its whole request (per card × cards) does.

A pod asking MIG instances (`nvidia.com/mig-<profile>`, the NVIDIA device plugin's, docs/
design.md §13) asks no HAMi device, so no quota here counts or refuses it.

A per-card request as a share of the card is counted on the namespace's smallest healthy
card (the least the pod can ask); HAMi counts the cards it would take. Where several quotas
of a namespace name one key, the smallest limit counts (HAMi's cache keeps the last one it
read; Kubernetes' admission enforces them all).
"""

from __future__ import annotations

import numpy as np

from advisor.core.model import Cluster, Placement, Pod
from advisor.core.profiles.base import Profile
from advisor.core.shape import Shape
from advisor.core.state import CardState


class QuotaBook:
    """Each namespace's limits and use, as the cycle places pods."""

    def __init__(self, cluster: Cluster, state: CardState) -> None:
        self.profile: Profile = state.profile
        self.limits: dict[tuple[str, str], int] = {}  # (namespace, resource) -> limit
        self.used: dict[tuple[str, str], int] = {}
        self.keys: tuple[str, str] | None = None
        dialect = self.profile.dialect
        if not self.profile.session.device_quota or dialect is None or not cluster.jobs.quotas:
            return
        self.keys = (dialect.memory, dialect.core)
        for quota in cluster.jobs.quotas:
            for name in self.keys:
                value = quota.hard.get(f"limits.{name}")
                if value is None or not value.strip().isdigit():
                    continue  # quantity.AsInt64 refuses it: HAMi leaves the key out
                key = (quota.namespace, name)
                self.limits[key] = min(int(value), self.limits.get(key, int(value)))
        self._cards = {n.name: n.cards for n in cluster.nodes}
        healthy = [c.memory_mib for n in cluster.nodes for c in n.cards if c.healthy]
        self._smallest = min(healthy, default=0)
        for pod in cluster.running:
            if pod.placement is not None:
                self.add(pod, pod.placement)

    def _asks(self, pod: Pod, capacities: list[int]) -> tuple[int, int]:
        shape = Shape.of_pod(pod)
        need = self.profile.card_need(np.array(capacities, dtype=np.int64), shape)
        return int(need.sum()), self.profile.card_core(shape) * len(capacities)

    def add(self, pod: Pod, placement: Placement) -> None:
        """The pod holds these cards: its namespace uses them (AddUsage). A MIG pod holds
        the device plugin's instances, no HAMi device: no quota counts or refuses it."""
        if self.keys is None or pod.request.mig_profile:
            return
        cards = self._cards.get(placement.node, ())
        sizes = {c.index: c.memory_mib for c in cards}
        memory, core = self._asks(pod, [sizes.get(i, 0) for i in placement.cards])
        for name, value in zip(self.keys, (memory, core), strict=True):
            key = (pod.namespace, name)
            self.used[key] = self.used.get(key, 0) + value

    def refusal(self, pod: Pod) -> str | None:
        """Why HAMi's FitQuota refuses every card for this pod, in its reason's words; None:
        within the quota (or no quota applies)."""
        if self.keys is None or not self.limits or pod.request.mig_profile:
            return None
        asked = self._asks(pod, [self._smallest] * max(pod.request.gpus, 1))
        for name, value in zip(self.keys, asked, strict=True):
            key = (pod.namespace, name)
            limit = self.limits.get(key)
            used = self.used.get(key, 0)
            if limit is not None and used + value > limit:
                return (
                    f"ResourceQuotaNotFit: namespace {pod.namespace}'s ResourceQuota "
                    f"limits.{name} is {limit}: {used} in use + {value} asked > {limit}"
                )
        return None
