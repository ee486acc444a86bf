"""The plan report as §8 JSON, as a kubectl script, and as card views for the pictures."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from advisor.core.model import Cluster, Placement
from advisor.core.plan import Plan, PlanReport
from advisor.core.scaledown import ScaleDownAdvice
from advisor.core.scaling import ScaleUp, ScaleUpAdvice
from advisor.output import card_view, placement_json, scheduler_json
from advisor.render._common import as_list, as_map, as_str

PLAN_SCHEMA = "xgpu-advisor/plan/v1"
MAX_HELD_LISTED = 50  # idle nodes kept, least utilised first; the rest are counted


def _gpus(value: float) -> float:
    return round(value, 3)


def _plan_json(plan: Plan, reference_mib: int, owners: Mapping[str, str | None]) -> dict[str, Any]:
    return {
        "rescues": list(plan.rescues),
        "evict": list(plan.evict),
        "placements": {name: placement_json(where) for name, where in plan.placements},
        "evicted_from": {name: placement_json(where) for name, where in plan.evicted_from},
        "evictions": len(plan.evict),
        "rescued_gpus": _gpus(plan.rescued_gpus),
        "rescued_mib": plan.rescued_mib,
        "moved_mib": plan.moved_mib,
        "moved_gpus": _gpus(plan.moved_mib / reference_mib),
        # evicted pods with no known controller: nothing may recreate them
        "unowned": [name for name in plan.evict if not owners.get(name)],
    }


def plan_json(
    report: PlanReport,
    cluster: Cluster | None = None,
    scale_up: Sequence[ScaleUp] = (),
    scale_down: ScaleDownAdvice | None = None,
) -> dict[str, Any]:
    """The §8 JSON; `cluster` (the planned one) lets each plan name its unowned pods. Of the
    idle nodes `scale_down` keeps, at most MAX_HELD_LISTED are listed,
    `scale_down_held_omitted` counts the rest."""
    scale_down = scale_down or ScaleDownAdvice(())
    ref = report.reference_card_mib
    owners = {p.name: p.owner for p in cluster.pods} if cluster is not None else {}
    ideal = report.ideal
    unresolved = []
    for u in report.unresolved:
        entry: dict[str, Any] = {"pod": u.pod, "cause": u.cause}
        if u.cluster_free_sufficient is not None:
            entry["cluster_free_sufficient"] = u.cluster_free_sufficient
        unresolved.append(entry)
    gpus = report.rescued_gpus
    return {
        "schema": PLAN_SCHEMA,
        "policy": {"node": report.policy.node, "card": report.policy.card},
        **({"scheduler": scheduler_json(cluster.scheduler)} if cluster is not None else {}),
        "plans": [_plan_json(p, ref, owners) for p in report.plans],
        "unresolved": unresolved,
        "scale_up": [u.json() for u in scale_up],
        # pods no node group template admits, with the autoscaler's reason (only when some)
        **(
            {"scale_up_not_triggered": [n.json() for n in scale_up.not_triggered]}
            if isinstance(scale_up, ScaleUpAdvice) and scale_up.not_triggered
            else {}
        ),
        "scale_down": [d.json() for d in scale_down.steps],
        "scale_down_held": [h.json() for h in scale_down.held[:MAX_HELD_LISTED]],
        "scale_down_held_omitted": max(len(scale_down.held) - MAX_HELD_LISTED, 0),
        "schedulable": {name: placement_json(where) for name, where in report.schedulable},
        "ideal": {
            "method": ideal.method,
            "pending_pods": ideal.pending_pods,
            "pending_gpus": _gpus(ideal.pending_mib / ref),
            "pending_mib": ideal.pending_mib,
            "repack_pods": ideal.repack_pods,
            "repack_gpus": _gpus(ideal.repack_mib / ref),
            "repack_mib": ideal.repack_mib,
            "repack_share": round(ideal.repack_share, 4),
            "repack_running_unplaced": ideal.repack_running_unplaced,
            "upper_bound_gpus": _gpus(min(ideal.free_mib, ideal.pending_mib) / ref),
            "upper_bound_mib": min(ideal.free_mib, ideal.pending_mib),
            "upper_bound_share": round(ideal.upper_share, 4),
        },
        "summary": {
            "pending": ideal.pending_pods,
            "pending_gpus": _gpus(report.pending_gpus),
            "pending_mib": ideal.pending_mib,
            "plans": len(report.plans),
            "rescued_pods": report.rescued_pods,
            "rescued_gpus": _gpus(gpus),
            "rescued_mib": report.rescued_mib,
            "rescued_share": round(report.rescued_share, 4),
            "evictions": report.evictions,
            "evictions_per_gpu": round(report.evictions / gpus, 3) if gpus else None,
            "unresolved": len(report.unresolved),
            "reference_card_mib": ref,
            "elapsed_seconds": round(report.elapsed_s, 3),
            "time_budget_seconds": report.budget_s,
            "budget_exhausted": report.budget_exhausted,
            "evaluations": report.evaluations,
        },
    }


def _as_pod_parts(name: str) -> tuple[str, str]:
    namespace, _, pod = name.partition("/")
    return (namespace, pod) if pod else ("default", namespace)


_K8S_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # DNS-1123 subdomain


def comment_safe(value: object) -> str:
    """Text for a shell comment: a control character (a newline would end the comment and
    start a command) becomes "?"."""
    return "".join(c if c.isprintable() else "?" for c in str(value))


def unresolved_causes(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(pod, cause) of each pod no plan rescues; a capacity cause says whether the cluster's
    free memory would do once consolidated, or it needs new nodes."""
    rows = []
    for raw in as_list(data.get("unresolved")):
        entry = as_map(raw)
        cause = as_str(entry.get("cause"), "?")
        if cause == "capacity" and "cluster_free_sufficient" in entry:
            cause += " (consolidate)" if entry.get("cluster_free_sufficient") else " (scale up)"
        rows.append((as_str(entry.get("pod"), "?"), cause))
    return rows


def kubectl_script(data: Mapping[str, Any]) -> str:
    """Shell commands that carry the plans out, in order; the advisor never runs them."""
    plans = list(data.get("plans") or [])
    summary = data.get("summary") or {}
    lines = [
        "#!/bin/sh",
        f"# xgpu-advisor rebalancing: {len(plans)} plan(s), {summary.get('evictions', 0)} "
        f"eviction(s), rescuing {summary.get('rescued_pods', 0)} Pending pod(s) "
        f"({summary.get('rescued_gpus', 0)} GPUs).",
        "# The advisor never evicts. Each pod is evicted here through the Eviction API, which",
        "# honours PodDisruptionBudgets: when a budget forbids an eviction the API refuses it",
        "# (HTTP 429) and the script stops there (set -e); the pods before it are already gone.",
        "# An evicted pod is recreated by its workload controller (Deployment, StatefulSet,",
        "# Job...) and placed by the scheduler, as the plan simulated; a pod with no controller",
        "# is NOT recreated. Run one plan at a time, in order, and check that its rescued pods",
        "# run before starting the next.",
        "set -e",
    ]
    for number, plan in enumerate(plans, 1):
        rescues = ", ".join(comment_safe(r) for r in plan.get("rescues") or [])
        lines += ["", f"# Plan {number}: rescues {rescues}"]
        placements = plan.get("placements") or {}
        unowned = set(plan.get("unowned") or [])
        for name in plan.get("evict") or []:
            namespace, pod = _as_pod_parts(str(name))
            to = placements.get(name) or {}
            cards = ",".join(str(c) for c in to.get("cards", []))
            warning = "; no controller known: check one recreates it" if name in unowned else ""
            if not (_K8S_NAME.fullmatch(namespace) and _K8S_NAME.fullmatch(pod)):
                lines.append(f"# not a Kubernetes pod name, left out: {comment_safe(name)}")
                continue
            where = f"comes back on {comment_safe(to.get('node', '?'))} card(s) {cards}{warning}"
            lines += eviction(namespace, pod, where)
    return "\n".join(lines) + "\n"


def eviction(namespace: str, pod: str, comment: str) -> list[str]:
    """The lines that evict one pod through the Eviction API (policy/v1), which honours its
    PodDisruptionBudget, unlike `kubectl delete pod`. `namespace` and `pod` must be valid
    Kubernetes names (the caller checks): they go into a URL path and a quoted here-document."""
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}/eviction"
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": namespace},
    }
    return [
        f"kubectl create --raw {shlex.quote(path)} -f - <<'EOF'  # {comment}",
        json.dumps(body),
        "EOF",
    ]


def plan_views(
    cluster: Cluster, report: PlanReport, max_plans: int | None = None
) -> list[dict[str, Any]]:
    """Per plan (the first `max_plans`): the nodes it touches before and after it, plans
    applied in order. In "after", the pods it rescued are marked `pending`."""
    where: dict[str, Placement] = {p.name: p.placement for p in cluster.pods if p.placement}
    where.update(report.schedulable)
    views = []
    for plan in report.plans[:max_plans]:
        nodes = {p.node for _, p in plan.placements} | {p.node for _, p in plan.evicted_from}
        before = card_view(cluster, where, nodes=nodes)
        where.update(plan.placements)
        after = card_view(cluster, where, set(plan.rescues), nodes)
        views.append({"before": before, "after": after})
    return views
