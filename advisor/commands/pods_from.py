"""`--pods-from FILE` (every command that reads live sources): a scenario file stands in for
the Kubernetes API beside live metrics, on hosts without Kubernetes and in the demo."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.core.model import Card, Cluster, Pod
from advisor.core.profiles import profile_of
from advisor.scenario import load_scenario

if TYPE_CHECKING:
    from advisor.sources import Gathered


def without_kubernetes_warning(gathered: Gathered, path: Path) -> Gathered:
    """The file stands in for Kubernetes, so its absence is no news; nor is a MIG node's
    missing strategy label where the file's node says mixed, what the live read models."""
    from advisor.sources.mignodes import MIG_STRATEGY_LABEL

    mixed = {n.name for n in load_scenario(path).nodes if n.mig_strategy == "mixed"}
    told = {
        f"node {n}: MIG cards and no {MIG_STRATEGY_LABEL} label; modelled as mixed" for n in mixed
    }
    kept = tuple(
        w for w in gathered.warnings if not w.startswith("no Kubernetes source") and w not in told
    )
    return dataclasses.replace(gathered, warnings=kept)


def with_pods_from(cluster: Cluster, path: Path, auto: bool) -> Cluster:
    """From a scenario file, the stand-in for the Kubernetes API: Pending pods; what metrics
    cannot know of running ones (owner, priority, annotations, cpu/memory requests, node
    selector, affinity, tolerations, PodGroup, whether Volcano may evict it); of each node
    what its Node object and its other pods would say (allocatable, labels, taints, cordon,
    CPU-only pods) and what the scheduler registered of its cards (NUMA, slots); the
    PodGroups, Queues and ResourceQuotas (docs/design.md §10.1); the HorizontalPodAutoscalers
    (§12.1); and, with `--scheduler
    auto`, the profile, which the Kubernetes API's annotations would have told, else, under
    a profile that runs Volcano's session, the file's actions and plugin options (Volcano's
    configmap, as the Kubernetes source applies it). The file's `now`, where it has one, is
    taken too: its Pending pods' creation times are of that moment, so their ages are
    counted to it (a file without one: to the run's own clock, as a live read). Its bound
    MIG pods come too, holding the instances it names (docs/design.md §13): the exporter
    serves no series for them, as for the Kubernetes API's; one whose instances the live
    cards lack is left out."""
    scenario = load_scenario(path)
    if auto and scenario.scheduler != cluster.scheduler:
        cluster = dataclasses.replace(
            cluster,
            scheduler=scenario.scheduler,
            policy=scenario.policy,
            max_vgpus_per_card=scenario.max_vgpus_per_card,
        )
    elif profile_of(cluster.scheduler).session.volcano:
        given = scenario.scheduler
        scheduler = dataclasses.replace(
            cluster.scheduler,
            actions=given.actions,
            gang=given.gang,
            overcommit_factor=given.overcommit_factor,
            queue_plugin=given.queue_plugin,
            enable_hierarchy=given.enable_hierarchy,
            ancestor_reclaim_level=given.ancestor_reclaim_level,
        )
        cluster = dataclasses.replace(cluster, scheduler=scheduler)
    described = {p.name: p for p in scenario.pods}
    running = tuple(
        dataclasses.replace(
            p,
            owner=d.owner,
            priority=d.priority,
            annotations=d.annotations,
            resources=d.resources,
            constraints=d.constraints,
            group=d.group,
            preemptable=d.preemptable,
            preemption_policy=d.preemption_policy,
        )
        if (d := described.get(p.name)) is not None
        else p
        for p in cluster.pods
    )
    known = {p.name for p in cluster.pods}
    pending = tuple(p for p in described.values() if p.placement is None and p.name not in known)
    mig = _bound_mig(cluster, [p for p in described.values() if p.name not in known])
    nodes = {n.name: n for n in scenario.nodes}
    merged = tuple(
        dataclasses.replace(
            n,
            allocatable=node.allocatable,
            labels=node.labels,
            taints=node.taints,
            unschedulable=node.unschedulable,
            other_pods=n.other_pods if node.other_pods is None else node.other_pods,
            cards=_registered(n.cards, node.cards),
        )
        if (node := nodes.get(n.name)) is not None
        else n
        for n in cluster.nodes
    )
    # The Pending pods name their PodGroups: the groups come with them (the cycle looks
    # each one up).
    return dataclasses.replace(
        cluster,
        nodes=merged,
        pods=running + mig + pending,
        jobs=scenario.jobs,
        autoscalers=scenario.autoscalers,
        now=scenario.now or cluster.now,
    )


def _bound_mig(cluster: Cluster, pods: list[Pod]) -> tuple[Pod, ...]:
    """The file's bound MIG pods whose instances the live cards have, none held twice."""
    have = {
        (n.name, c.index, i.start): i.profile
        for n in cluster.nodes
        for c in n.cards
        for i in c.mig or ()
    }
    kept: list[Pod] = []
    for pod in pods:
        if pod.placement is None or not pod.request.mig_profile:
            continue
        keys = [(pod.placement.node, card, start) for card, start in pod.mig_instances]
        if all(have.get(k) == pod.request.mig_profile for k in keys):
            kept.append(pod)
            for k in keys:
                del have[k]  # a second pod naming it is left out
    return tuple(kept)


def _registered(cards: tuple[Card, ...], described: tuple[Card, ...]) -> tuple[Card, ...]:
    """The exporter's cards with the NUMA node and slots the file gives the same index."""
    by_index = {c.index: c for c in described}
    return tuple(
        dataclasses.replace(
            c,
            numa=c.numa if c.numa is not None else d.numa,
            max_vgpus=c.max_vgpus if c.max_vgpus is not None else d.max_vgpus,
        )
        if (d := by_index.get(c.index)) is not None
        else c
        for c in cards
    )
