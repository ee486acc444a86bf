"""JSON-ready forms of the core's results (docs/design.md §5) and the card view the reports
draw; the plan's §8 JSON is `advisor.output.plan`'s."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from advisor import schemas
from advisor.core.autoscalers import Reach
from advisor.core.diagnosis import Diagnosis, PodDiagnosis, shown_causes
from advisor.core.jobs import GroupOutcome
from advisor.core.model import (
    WEIGHT_KEYS,
    Cluster,
    Mode,
    Node,
    Placement,
    Pod,
    ProfileName,
    Scheduler,
)
from advisor.core.nodefilters import Resources, Taint, bytes_text, cpu_text
from advisor.core.preemption import Preemption
from advisor.core.profiles import DEFAULT_PROFILE, Profile, profile_for, profile_of
from advisor.core.whatif import PolicyOutcome, ProfileOutcome, WhatIf, held_mib
from advisor.output.autoscalers import autoscalers_json
from advisor.output.fragmentation import summary_json
from advisor.output.mig import mig_slices


def placement_json(placement: Placement | None) -> schemas.PlacementJson | None:
    if placement is None:
        return None
    return {"node": placement.node, "cards": list(placement.cards)}


def request_json(pod: Pod, profile: ProfileName = DEFAULT_PROFILE) -> schemas.RequestJson:
    """The totals; a share of each card and (where the profile has them) a whole-card
    request only when asked, so cce's JSON stays as it was."""
    r = pod.request
    data: schemas.RequestJson = {
        "gpus": r.gpus,
        "memory_mib": r.memory_mib,
        "core_percent": r.core_percent,
    }
    if r.memory_percent:
        data["memory_percent"] = r.memory_percent
    if r.mig_profile:
        data["mig_profile"] = r.mig_profile
    elif r.whole_card and not profile_for(profile).requires_memory:
        data["whole_card"] = True
    return data


def scheduler_json(scheduler: Scheduler) -> schemas.SchedulerJson:
    """Which profile judged the cluster, with that profile's own settings (§9.2)."""
    data: schemas.SchedulerJson = {"profile": scheduler.profile}
    for key in profile_for(scheduler.profile).settings:
        if key == "weights":
            data["weights"] = dict(zip(WEIGHT_KEYS, scheduler.weights, strict=True))
        elif key == "default_memory_mib":
            data["default_memory_mib"] = scheduler.default_memory_mib
        elif key == "schedule_weight":
            data["schedule_weight"] = scheduler.schedule_weight
    return data


def resources_json(resources: Resources) -> dict[str, str]:
    """A cpu/memory request as Kubernetes quantities, the parts asked for only."""
    parts = {}
    if resources.cpu_milli:
        parts["cpu"] = cpu_text(resources.cpu_milli)
    if resources.memory_bytes:
        parts["memory"] = bytes_text(resources.memory_bytes)
    return parts


def taint_text(taint: Taint) -> str:
    """kubectl's form: key=value:Effect (key:Effect without a value)."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def pod_diagnosis_json(
    d: PodDiagnosis,
    profile: ProfileName = DEFAULT_PROFILE,
    grouped: bool = False,
    age: float | None = None,
) -> schemas.PodDiagnosisJson:
    entry: schemas.PodDiagnosisJson = {
        "pod": d.pod.name,
        "cause": d.cause,
        "message": d.message,
        "placement": placement_json(d.placement),
        "request": request_json(d.pod, profile),
        "priority": d.pod.priority,
        "nodes": {node: list(reasons) for node, reasons in d.node_reasons},
        "nodes_omitted": d.nodes_omitted,
    }
    # What else binds the pod to a node, when anything does (§9.1): shown beside its request.
    resources = resources_json(d.pod.resources)
    if resources:
        entry["resources"] = resources
    if d.pod.constraints.node_selector:
        entry["node_selector"] = dict(d.pod.constraints.node_selector)
    if d.node_summary is not None:
        entry["node_summary"] = d.node_summary
        entry["reason_counts"] = dict(d.reason_counts)
    if d.cluster_free_sufficient is not None:
        entry["cluster_free_sufficient"] = d.cluster_free_sufficient
    if grouped:  # the cluster has PodGroups (§10.3): every Pending pod names its own
        entry["group"] = d.pod.group
    entry["preemption"] = preemption_json(d.preemption)
    if age is not None:  # its creation time is known (§12.3)
        entry["pending_age_seconds"] = age
    return entry


def preemption_json(p: Preemption | None) -> schemas.PreemptionJson | None:
    if p is None:
        return None
    return {
        "verdict": p.verdict,
        "message": p.message,
        "node": p.node,
        "victims": list(p.victims),
        "helps": p.helps,
    }


def diagnosis_json(
    diagnosis: Diagnosis,
    scheduler: Scheduler | None = None,
    ages: Mapping[str, float] | None = None,
    reaches: Sequence[Reach] = (),
) -> schemas.DiagnosisJson:
    """`scheduler`: the cluster's, named beside the policy (every command passes it);
    `ages`: Pending pods' ages by name (`core.waiting.pending_ages`, §12.3); `reaches`: the
    autoscalers' reachable replicas (`core.autoscalers`), where it has some."""
    policy = diagnosis.policy
    profile = DEFAULT_PROFILE if scheduler is None else scheduler.profile
    judged: schemas.SchedulerPartJson = (
        {"scheduler": scheduler_json(scheduler)} if scheduler is not None else {}
    )
    # Where the cluster has PodGroups (§10.3): each job once.
    grouped: schemas.GroupsPartJson = (
        {"groups": [group_json(g) for g in diagnosis.groups]} if diagnosis.grouped else {}
    )
    no_mig: schemas.MigProfilesPartJson = {}  # `output.mig.add_mig_profiles` adds them
    return {
        "schema": schemas.DIAGNOSIS_SCHEMA,
        "policy": {"node": policy.node, "card": policy.card},
        **judged,
        "pods": [
            pod_diagnosis_json(d, profile, diagnosis.grouped, (ages or {}).get(d.pod.name))
            for d in diagnosis.pods
        ],
        "summary": diagnosis.summary,
        **grouped,
        **autoscalers_json(reaches),
        **no_mig,
    }


def group_json(g: GroupOutcome) -> schemas.GroupJson:
    return {
        "name": g.name,
        "queue": g.queue,
        "min_member": g.min_member,
        "ready": g.ready,
        "pending": g.pending,
        "state": g.state,
    }


def card_allotment_mib(rules: Profile, pod: Pod, card_mib: int) -> int:
    """What `pod` holds of a card of `card_mib`: its memory per card, or (a share, a whole
    card: hami, volcano-vgpu) what the profile gives it of this card."""
    return held_mib(rules, pod, (card_mib,))


def card_view(
    cluster: Cluster,
    where: Mapping[str, Placement],
    fresh: Collection[str] = (),
    nodes: Collection[str] | None = None,
) -> schemas.CardViewJson:
    """Cards (of `nodes`, or all) with the pods `where` puts on them; pods in `fresh` are
    marked `pending` (placed by this cycle or plan, not running yet)."""
    wanted = None if nodes is None else set(nodes)
    rules = profile_of(cluster.scheduler)
    on_card: dict[tuple[str, int], list[Pod]] = defaultdict(list)
    on_node: dict[str, list[Pod]] = defaultdict(list)
    for pod in cluster.pods:
        placement = where.get(pod.name)
        if placement is None or (wanted is not None and placement.node not in wanted):
            continue
        on_node[placement.node].append(pod)
        if pod.request.mig_profile:  # it holds MIG instances, not vGPUs (design §13)
            continue
        for index in placement.cards:
            on_card[(placement.node, index)].append(pod)
    views: list[schemas.NodeViewJson] = []
    instances = mig_slices(cluster, where, fresh)
    for node in cluster.nodes:
        if wanted is not None and node.name not in wanted:
            continue
        cards: list[schemas.CardJson] = []
        for card in node.cards:
            pods = on_card.get((node.name, card.index), [])
            mode = Mode.UNUSED
            if pods:
                core = any(p.request.core_percent for p in pods)
                mode = Mode.MEMORY_CORE if core else Mode.MEMORY
            cards.append(
                {
                    "index": card.index,
                    "memory_mib": card.memory_mib,
                    "model": card.model,
                    "healthy": card.healthy,
                    "mode": int(mode),
                    "vgpus": len(pods),
                    "core_allotted_percent": sum(p.request.card_core_percent for p in pods),
                    "allotments": [
                        {
                            "pod": p.name,
                            "memory_mib": card_allotment_mib(rules, p, card.memory_mib),
                            "core_percent": p.request.card_core_percent,
                            "pending": p.name in fresh,
                        }
                        for p in pods
                    ],
                }
            )
            if (mig := instances.get((node.name, card.index))) is not None:
                cards[-1]["mig"] = mig
        view: schemas.NodeViewJson = {"name": node.name, "cards": cards}
        _add_node_fit(view, node, on_node.get(node.name, []))
        views.append(view)
    return {"nodes": views}


def _add_node_fit(view: schemas.NodeViewJson, node: Node, placed: Sequence[Pod]) -> None:
    """The node's cpu and memory (allocatable, and requested by the pods `placed` on it and
    by its other pods) and its taints, added to its view; nothing for a node that sets none
    of them."""
    allocatable = node.allocatable
    if allocatable.cpu_milli is not None or allocatable.memory_bytes is not None:
        others = node.other_pods or ()
        view["resources"] = {
            "cpu_allocatable_milli": allocatable.cpu_milli,
            "memory_allocatable_bytes": allocatable.memory_bytes,
            "cpu_requested_milli": sum(p.resources.cpu_milli for p in placed)
            + sum(o.resources.cpu_milli for o in others),
            "memory_requested_bytes": sum(p.resources.memory_bytes for p in placed)
            + sum(o.resources.memory_bytes for o in others),
        }
    if node.taints:
        view["taints"] = [taint_text(t) for t in node.taints]
    if node.unschedulable:
        view["unschedulable"] = True


def cluster_view(cluster: Cluster, diagnosis: Diagnosis | None = None) -> schemas.CardViewJson:
    """Every card with its allotments after the cycle; pods the cycle placed are `pending`."""
    where = {p.name: p.placement for p in cluster.pods if p.placement is not None}
    fresh = set()
    if diagnosis is not None:
        for d in diagnosis.pods:
            if d.placement is not None:
                where[d.pod.name] = d.placement
                fresh.add(d.pod.name)
    return card_view(cluster, where, fresh)


# -- what-if -----------------------------------------------------------------------------------


def whatif_json(w: WhatIf) -> schemas.WhatIfJson:
    """One profile's policy what-if; `scheduler` names the profile that judged it."""
    relative: schemas.RelativeRequestsJson = (
        {"pending_relative": w.pending_relative} if w.pending_relative else {}
    )
    return {
        "schema": schemas.WHATIF_SCHEMA,
        "current": {
            "policy": {"node": w.cluster_policy.node, "card": w.cluster_policy.card},
            "scheduler": scheduler_json(w.scheduler),
            "running": w.running,
            "pending": w.pending,
            "pending_mib": w.pending_mib,
            **relative,
            "fragmentation": summary_json(w.fragmentation),
        },
        "policies": [_policy_json(o) for o in w.outcomes],
    }


def _policy_json(o: PolicyOutcome) -> schemas.PolicyOutcomeJson:
    """One policy's outcome; the counts of pods on unhealthy cards only when some are."""
    repack: schemas.RepackJson = {
        "pods": o.repack.pods,
        "placed": o.repack.placed,
        "placed_mib": o.repack.placed_mib,
        "running_placed": o.repack.running_placed,
        "running_lost": o.repack.running_lost,
        "pending_placed": o.repack.pending_placed,
        "fragmentation": summary_json(o.repack.fragmentation),
    }
    if o.repack.on_unhealthy:
        repack["on_unhealthy"] = o.repack.on_unhealthy
    entry: schemas.PolicyOutcomeJson = {
        "node": o.policy.node,
        "card": o.policy.card,
        "pending_placed": o.pending_placed,
        "pending_placed_mib": o.pending_placed_mib,
        "fragmentation": summary_json(o.fragmentation),
        "repack": repack,
    }
    if o.pending_on_unhealthy:
        entry["pending_on_unhealthy"] = o.pending_on_unhealthy
    return entry


def schedulers_json(outcomes: Collection[ProfileOutcome], running: int) -> schemas.SchedulersJson:
    """The same cluster and queue under several profiles, side by side (the per-policy
    what-if is left out: it answers which policy within one scheduler)."""
    pending = next(iter(outcomes)).pending_by_cause["pending"] if outcomes else 0
    return {
        "schema": schemas.WHATIF_SCHEMA,
        "running": running,
        "pending": pending,
        "schedulers": [_scheduler_json(o) for o in outcomes],
    }


def _scheduler_json(o: ProfileOutcome) -> schemas.SchedulerOutcomeJson:
    entry: schemas.SchedulerOutcomeJson = {
        "profile": o.scheduler.profile,
        "scheduler": scheduler_json(o.scheduler),
        "policy": {"node": o.policy.node, "card": o.policy.card},
        "max_vgpus_per_card": o.max_vgpus_per_card,
        "pending": {c: o.pending_by_cause[c] for c in shown_causes(o.pending_by_cause)},
        "placed": o.placed,
        "placed_mib": o.placed_mib,
        "random_ties": o.random_ties,
        "running_invalid": o.running_invalid,
        "fragmentation_now": summary_json(o.fragmentation_now),
        "fragmentation": summary_json(o.fragmentation),
        "placements": {name: placement_json(where.placement) for name, where in o.placements},
        "causes": dict(o.causes),
    }
    if o.on_unhealthy:
        entry["on_unhealthy"] = list(o.on_unhealthy)
    return entry
