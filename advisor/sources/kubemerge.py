"""Kubernetes' view merged into the metric-derived pods: Pending pods, bound MIG pods (the
instances each holds: `migheld`), priorities, owners, annotations, every pod's effective
request and node constraints, each node's other pods and the pods that stay with it, what
each pod says of its job, and the checks that show where the two sources disagree.

A running pod keeps what the exporter reports it holds, except that a pod asking a share of
each card or whole cards keeps that request when it gives exactly what the exporter reports
on every card it holds: moved by a plan, it takes its share of the target card, as the
scheduler would give it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from advisor.core.mig import mig_resource
from advisor.core.model import CCE, Card, Node, Placement, Pod, Request, Scheduler
from advisor.core.profiles import Profile, profile_of
from advisor.core.state import Shape
from advisor.errors import known
from advisor.podspec import PodGpu
from advisor.podspec.dialects import HAMI
from advisor.podspec.scheduling import PodScheduling
from advisor.sources.migheld import Attributed, held_instances
from advisor.sources.notes import Notes, names
from advisor.sources.values import KubeNode, KubeState, PodFacts
from advisor.words import plural

# Kept out of scenario files: large and never read by the advisor.
NOISY_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})


def _annotations(pod: PodGpu) -> dict[str, str]:
    return {k: v for k, v in pod.annotations.items() if k not in NOISY_ANNOTATIONS}


def merge_kubernetes(
    running: list[Pod],
    nodes: list[Node],
    kube: KubeState,
    notes: Notes,
    scheduler: Scheduler = CCE,
    attributed: Iterable[Attributed] = (),
) -> list[Pod]:
    """`attributed`: the MIG instances the exporter sees bound pods' processes use."""
    notes.warnings.extend(kube.warnings)
    rules = profile_of(scheduler)
    cards = {(n.name, c.index): c for n in nodes for c in n.cards}
    by_key = {p.key: p for p in kube.pods if p.namespace and p.name}
    if len(by_key) < len(kube.pods):
        notes.warnings.append("Kubernetes: pods without namespace or name ignored")
    pending = [p for p in by_key.values() if p.phase == "Pending" and p.node is None]
    pending_keys = {p.key for p in pending}
    pods: list[Pod] = []
    unknown: list[str] = []
    for pod in running:
        k = by_key.get(pod.name)
        if pod.name in pending_keys:
            notes.warnings.append(
                f"pod {pod.name}: Pending in Kubernetes but reported running by the exporter "
                "(re-created?); the exporter's vGPUs are left out"
            )
            continue
        if k is None:
            unknown.append(pod.name)
            pods.append(pod)
            continue
        pods.append(
            replace(pod, request=_declared(pod, k.request, cards, rules), **_bound_fields(k, kube))
        )
    if unknown:
        notes.warnings.append(
            "pods reported by the exporters but unknown to Kubernetes (deleted?): " + names(unknown)
        )
    pods.extend(_bound_mig_pods(by_key, {p.name for p in pods}, nodes, kube, notes, attributed))
    _check_bound_pods(by_key, {p.name for p in pods}, nodes, notes)
    _check_nodes(kube.nodes, nodes, notes)
    _check_mig_allocatable(kube.nodes, nodes, notes)
    order = sorted(pending, key=lambda p: (p.created is None, p.created or "", p.key))
    order = _plain_gpu_pods(order, nodes, notes)
    pods.extend(
        replace(
            _pending_pod(p, kube.scheduling.get(p.key, PodScheduling()), notes, scheduler),
            **_fact_fields(kube.facts.get(p.key, PodFacts())),
        )
        for p in order
    )
    return _known_groups(pods, kube, notes)


def _bound_mig_pods(
    by_key: Mapping[str, PodGpu],
    modelled: set[str],
    nodes: list[Node],
    kube: KubeState,
    notes: Notes,
    found: Iterable[Attributed],
) -> list[Pod]:
    """Pods bound to a modelled node that ask MIG instances (design §13): of a profile
    (mixed strategy), or `nvidia.com/gpu` alone on a node whose device plugin runs the
    single strategy, which advertises the node's instances so (instances of its one
    profile). Each holds the instances the exporter sees its processes use, the rest
    guessed (`migheld`)."""
    single = {
        n.name: profile
        for n in nodes
        if n.mig_strategy == "single"
        for profile in {m.profile for c in n.cards for m in c.mig or ()}
    }
    model_nodes = {n.name for n in nodes}  # a pod bound elsewhere: `_check_nodes` says so
    asked = {
        p.key: request
        for p in by_key.values()
        if p.node is not None
        and p.node in model_nodes
        and p.key not in modelled
        and p.key not in notes.stale_pods
        and p.phase in ("Pending", "Running")
        and (request := _mig_request(p, single.get(p.node))) is not None
    }
    bound = sorted(
        (by_key[key] for key in asked), key=lambda p: (p.created is None, p.created or "", p.key)
    )
    order = [(k.key, known(k.node, "a bound pod's node"), asked[k.key]) for k in bound]
    held = held_instances(order, nodes, found, notes)
    return [
        Pod(
            key,
            request,
            Placement(node, tuple(card for card, _ in held[key])),
            mig_instances=held[key],
            **_bound_fields(by_key[key], kube),
        )
        for key, node, request in order
        if key in held
    ]


def _plain_gpu_pods(pending: list[PodGpu], nodes: list[Node], notes: Notes) -> list[PodGpu]:
    """Pending pods asking `nvidia.com/gpu` alone, where single-strategy nodes advertise
    their MIG instances so. Where every GPU node is such a node, all of one profile, that
    resource is those instances only, and a MIG pod of the profile is offered nothing else:
    such a pod asks instances of that profile, exactly. Elsewhere it could take a whole
    card or an instance of one of several profiles (and a MIG pod of the profile is offered
    a mixed node's `nvidia.com/mig-<P>`), which the cycle does not weigh together (design
    §13): it is judged for whole cards only, said in a warning."""
    single = [n.name for n in nodes if n.mig_strategy == "single"]
    plain = [p for p in pending if _plain_gpus(p)]
    if not single or not plain:
        return pending
    profiles = {m.profile for n in nodes if n.name in single for c in n.cards for m in c.mig or ()}
    others = any(n.cards and n.mig_strategy != "single" for n in nodes)
    if len(profiles) == 1 and not others:
        (profile,) = profiles
        asked = {p.key for p in plain}
        return [
            replace(p, request=replace(p.request, mig_profile=profile))
            if p.key in asked and p.request is not None
            else p
            for p in pending
        ]
    notes.warnings.append(
        f"Pending pods asking nvidia.com/gpu, which the single-strategy MIG nodes "
        f"{names(single)} advertise as their instances, are judged for whole cards only "
        f"(not for those instances): {names(p.key for p in plain)}"
    )
    return pending


def _mig_request(pod: PodGpu, single: str | None) -> Request | None:
    """The MIG request of a bound pod: its profile's, or under the single strategy (the
    node's one profile, `single`) a plain `nvidia.com/gpu` ask (HAMi's dialect, whole
    cards, no core) as that many instances of it; None for a pod asking neither."""
    request = pod.request
    if request is None or request.mig_profile:
        return request
    return replace(request, mig_profile=single) if single and _plain_gpus(pod) else None


def _plain_gpus(pod: PodGpu) -> bool:
    """Whether the pod asks `nvidia.com/gpu` alone (HAMi's dialect, whole cards, no core)."""
    r = pod.request
    return (
        r is not None
        and not r.mig_profile
        and pod.dialect == HAMI.name
        and r.whole_card
        and not r.core_percent
    )


def _bound_fields(k: PodGpu, kube: KubeState) -> dict[str, Any]:
    """What Kubernetes says of a bound pod beyond its cards: the same for a vGPU pod the
    exporter reports and a MIG pod read from the API alone. Its unreadable scheduling fields
    were warned about with its node."""
    read = kube.scheduling.get(k.key, PodScheduling())
    facts = kube.facts.get(k.key, PodFacts())  # what a plan's cost reads (§8)
    return {
        "priority": k.priority,
        "owner": k.owner,
        "annotations": _annotations(k),
        "resources": read.resources,
        "constraints": read.constraints,
        "started": facts.started,
        "labels": facts.labels,
        **_fact_fields(facts),
    }


def _fact_fields(facts: PodFacts) -> dict[str, Any]:
    """What the pod says of its job, and its times (§12.3)."""
    return {
        "created": facts.created,
        "scheduled": facts.scheduled,
        "group": facts.group,
        "preemptable": facts.preemptable,
        "preemption_policy": facts.preemption_policy,
        "role": facts.role,
    }


def _known_groups(pods: list[Pod], kube: KubeState, notes: Notes) -> list[Pod]:
    """A pod naming a PodGroup the API does not list keeps no group (Volcano does not
    schedule it until its group exists): said once for all of them."""
    known = {g.name for g in kube.jobs.jobs.groups}
    missing = sorted({p.group for p in pods if p.group is not None and p.group not in known})
    if not missing:
        return pods
    notes.warnings.append(
        f"pods name PodGroups that do not exist (Volcano waits for them): {names(missing)}"
    )
    return [replace(p, group=None) if p.group in missing else p for p in pods]


def _declared(
    pod: Pod, declared: Request | None, cards: Mapping[tuple[str, int], Card], rules: Profile
) -> Request:
    """The pod's own share or whole-card request when the profile's rules give it exactly
    what the exporter reports on each of its cards; else what the exporter reports."""
    if declared is None or pod.placement is None or declared.gpus != pod.request.gpus:
        return pod.request
    if not (declared.whole_card or declared.memory_percent) or rules.requires_memory:
        return pod.request
    shape = Shape.of(declared)
    for index in pod.placement.cards:
        card = cards.get((pod.placement.node, index))
        if card is None:
            return pod.request
        need = rules.card_need(np.array([card.memory_mib], dtype=np.int64), shape)
        if int(need[0]) != pod.request.card_memory_mib:
            return pod.request
    if rules.card_core(shape) != pod.request.card_core_percent:
        return pod.request
    return declared


def _check_bound_pods(
    by_key: Mapping[str, PodGpu], modelled: set[str], nodes: list[Node], notes: Notes
) -> None:
    model_nodes = {n.name for n in nodes}
    unreported = [
        f"{p.key} on {p.node}"
        for p in by_key.values()
        if p.node in model_nodes
        and p.key not in modelled
        and p.key not in notes.stale_pods
        and p.phase in ("Pending", "Running")
        and p.request is not None
    ]
    if unreported:
        notes.warnings.append(
            "pods bound to GPU nodes that no exporter reports a vGPU for (their cards look "
            f"freer than they are): {names(unreported)}"
        )


def _check_nodes(kube_nodes: tuple[KubeNode, ...], nodes: list[Node], notes: Notes) -> None:
    model_nodes = {n.name for n in nodes}
    known = {n.name for n in kube_nodes}
    silent = [
        n.name
        for n in kube_nodes
        if n.advertises_gpus and n.name not in model_nodes and n.name not in notes.stale_nodes
    ]
    if silent:
        notes.warnings.append(f"GPU nodes without exporter series (not modelled): {names(silent)}")
    strangers = model_nodes - known
    if strangers:
        notes.warnings.append(
            f"nodes with exporter series that Kubernetes does not know: {names(strangers)}"
        )


def _check_mig_allocatable(
    kube_nodes: tuple[KubeNode, ...], nodes: list[Node], notes: Notes
) -> None:
    """The instances a node's allocatable advertises per profile (`nvidia.com/mig-<P>`, the
    device plugin's mixed strategy) against those the exporter lists on its cards (design
    §13): a disagreement is warned, naming both counts. The model keeps the exporter's: the
    allocatable gives counts, never where an instance starts, which the cycle's geometry
    needs. A node whose allocatable names no MIG resource (single strategy: `nvidia.com/gpu`;
    no device plugin) is not compared."""
    modelled = {n.name: n for n in nodes}
    for kube_node in kube_nodes:
        node = modelled.get(kube_node.name)
        advertised = {p: n for p, n in kube_node.mig_allocatable.items() if n > 0}
        if node is None or not kube_node.mig_allocatable:
            continue  # not modelled (`_check_nodes` says so), or no MIG resource named
        listed = Counter(instance.profile for card in node.cards for instance in card.mig or ())
        if advertised and not listed:
            asked = ", ".join(f"{mig_resource(p)}: {n}" for p, n in sorted(advertised.items()))
            notes.warnings.append(
                f"node {node.name}: allocatable advertises {asked}, but the exporter lists no "
                "MIG instance there (MIG mode unseen, or its instances unlisted); no MIG pod "
                "is placed there"
            )
            continue
        for profile in sorted(advertised.keys() | listed.keys()):
            has, lists = advertised.get(profile, 0), listed.get(profile, 0)
            if has != lists:
                notes.warnings.append(
                    f"node {node.name}: allocatable {mig_resource(profile)} is {has}, the "
                    f"exporter lists {plural(lists, 'such instance')}; the exporter's are modelled"
                )


def _pending_pod(pod: PodGpu, read: PodScheduling, notes: Notes, scheduler: Scheduler) -> Pod:
    """A Pending pod whose GPU request or scheduling fields cannot be read is `invalid`:
    where it could go, and whether it fits, are not known. So is one asking what the profile
    does not share (whole cards, a share of each card: CCE)."""
    problems = "; ".join(pod.problems)
    request, invalid = pod.request, None
    if request is None:
        request, invalid = Request(gpus=1, memory_mib=0), problems or "no GPU request readable"
    else:
        if problems:
            notes.warnings.append(f"pod {pod.key}: {problems}")
        profile = profile_of(scheduler)
        shared = not request.mig_profile  # a MIG pod asks instances, not a card's share
        if shared and profile.requires_memory and (request.whole_card or request.memory_percent):
            asked = "whole cards" if request.whole_card else "a share of each card"
            invalid = (
                f"asks {asked} ({pod.dialect} resources), which {profile.title} does not share; "
                f"pass --scheduler {pod.dialect} if that scheduler places it"
            )
    if read.problems:
        invalid = "; ".join(filter(None, (invalid, *read.problems)))
    return Pod(
        pod.key,
        request,
        priority=pod.priority,
        owner=pod.owner,
        annotations=_annotations(pod),
        invalid=invalid,
        resources=read.resources,
        constraints=read.constraints,
    )


def with_other_pods(nodes: list[Node], pods: list[Pod], kube: KubeState) -> list[Node]:
    """Each node Kubernetes knows, with the pods on it that the model does not hold as GPU
    pods (no GPU, or vGPUs the exporters do not report): those a drain would move, which
    scale-down must count too, and those that stay with the node; all take its cpu, memory
    and pod slots. A node Kubernetes does not know keeps `other_pods` None (not known)."""
    modelled = {p.name for p in pods}
    known = {n.name: n for n in kube.nodes}
    return [
        replace(
            node,
            other_pods=tuple(p for p in known[node.name].pods if p.name not in modelled),
            resident_pods=tuple(p for p in known[node.name].residents if p.name not in modelled),
        )
        if node.name in known
        else node
        for node in nodes
    ]
