"""The plans as a POSIX shell script of kubectl commands; the advisor never runs it.

Each plan is all or nothing. A plan with one eviction that cannot be written (a name that
is not a Kubernetes name, or a pod whose node is not known) is left out whole, and so are
the plans after it, which were planned on top of it: evicting the rest of a plan would
disrupt pods with no rescue to show for it. Before a plan's first eviction, the script
checks that every pod the plan evicts still runs on the node the plan found it on, and
stops otherwise: the cluster has moved on since the plan was made.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.render.common.values import (
    as_int,
    as_list,
    as_map,
    as_str,
    fmt_num,
)
from advisor.words import noun_for, plural

_K8S_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # DNS-1123 subdomain

HEADER = [
    "# The advisor never evicts. Each pod is evicted here through the Eviction API, which",
    "# honours PodDisruptionBudgets: when a budget forbids an eviction the API refuses it",
    "# (HTTP 429) and the script stops there (set -e); the pods before it are already gone.",
    "# Before a plan's first eviction the script checks that each pod the plan evicts still",
    "# runs on the node the plan found it on, and stops if one does not.",
    "# An evicted pod is recreated by its workload controller (Deployment, StatefulSet,",
    "# Job...) and placed by the scheduler, as the plan simulated; a pod with no controller",
    "# is NOT recreated. Run one plan at a time, in order, and check that its rescued pods",
    "# run before starting the next.",
]


def comment_safe(value: object) -> str:
    """Text for a shell comment: a control character (a newline would end the comment and
    start a command) becomes "?"."""
    return "".join(c if c.isprintable() else "?" for c in str(value))


def as_pod_parts(name: str) -> tuple[str, str]:
    namespace, _, pod = name.partition("/")
    return (namespace, pod) if pod else ("default", namespace)


def is_kubernetes_name(text: str) -> bool:
    return _K8S_NAME.fullmatch(text) is not None


@dataclass(frozen=True, slots=True)
class Eviction:
    namespace: str
    pod: str
    from_node: str  # where the plan found it
    comment: str


def _plan_evictions(plan: Mapping[str, Any]) -> tuple[list[Eviction], str | None]:
    """The plan's evictions, or why one of them cannot be written (then the plan is left
    out)."""
    placements = as_map(plan.get("placements"))
    evicted_from = as_map(plan.get("evicted_from"))
    unowned = {u for u in as_list(plan.get("unowned")) if isinstance(u, str)}
    found = []
    for name in as_list(plan.get("evict")):
        namespace, pod = as_pod_parts(str(name))
        if not (is_kubernetes_name(namespace) and is_kubernetes_name(pod)):
            return [], f"not a Kubernetes pod name, left out: {comment_safe(name)}"
        node = as_map(evicted_from.get(name)).get("node")
        if not isinstance(node, str) or not is_kubernetes_name(node):
            return [], f"the node {comment_safe(name)} runs on is not known, left out"
        to = as_map(placements.get(name))
        cards = ",".join(str(c) for c in as_list(to.get("cards")))
        warning = "; no controller known: check one recreates it" if name in unowned else ""
        card_word = noun_for(len(as_list(to.get("cards"))), "card")
        where = f"{comment_safe(to.get('node', '?'))} {card_word}"
        comment = f"comes back on {where} {cards}{warning}"
        found.append(Eviction(namespace, pod, node, comment))
    return found, None


def kubectl_script(data: Mapping[str, Any]) -> str:
    """Shell commands that carry the plans out, in order, each plan checked first."""
    plans = [as_map(p) for p in as_list(data.get("plans"))]
    summary = as_map(data.get("summary"))
    body: list[str] = []
    left_out_from: int | None = None
    for number, plan in enumerate(plans, 1):
        rescues = ", ".join(comment_safe(r) for r in as_list(plan.get("rescues")))
        body += ["", f"# Plan {number}: rescues {rescues}"]
        evictions, problem = _plan_evictions(plan)
        if problem is not None:
            count = len(as_list(plan.get("evict")))
            body += [
                f"# {problem}",
                f"# Plan {number} is left out whole (a plan is all or nothing): none of its "
                f"{plural(count, 'eviction')} is written,",
                "# nor any of the plans after it, which were planned on top of it.",
            ]
            left_out_from = number
            break
        if evictions:
            body.append("# First: is every pod still where the plan found it?")
        body += [check(e, number) for e in evictions]
        for e in evictions:
            body += eviction(e.namespace, e.pod, e.comment)
    lines = [
        "#!/bin/sh",
        f"# xgpu-advisor rebalancing: {plural(len(plans), 'plan')}, "
        f"{plural(as_int(summary.get('evictions')), 'eviction')}, rescuing "
        f"{plural(as_int(summary.get('rescued_pods')), 'Pending pod')} "
        f"({summary.get('rescued_gpus', 0)} GPUs).",
    ]
    if left_out_from is not None:
        lines.append(
            f"# Plans {left_out_from} to {len(plans)} are left out: see Plan {left_out_from}."
        )
    lines += [*HEADER, "set -e", *body]
    return "\n".join(lines) + "\n"


def check(e: Eviction, plan: int) -> str:
    """One line that stops the script unless the pod exists on the node the plan assumed.
    kubectl reads nothing from the script's stdin (`sh < script` or a pipe into sh)."""
    name = f"{e.namespace}/{e.pod}"
    message = f"xgpu-advisor: {name} is not on {e.from_node} any more: plan {plan} not started"
    return (
        f"kubectl get pod --namespace {e.namespace} {e.pod} -o 'jsonpath={{.spec.nodeName}}' "
        f"</dev/null | grep -qxF {shlex.quote(e.from_node)} "
        f"|| {{ echo {shlex.quote(message)} >&2; exit 1; }}"
    )


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


def _safe(value: Any) -> str:
    return comment_safe(as_str(value, "?"))


def kubectl_input(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The plan JSON reduced to well-typed, shell-safe values for `kubectl_script`
    (which expects the advisor's own output, not whatever a report file holds)."""
    plans = []
    for raw in as_list(plan.get("plans")):
        entry = as_map(raw)
        placements, evicted_from = (
            {
                _safe(name): {
                    "node": _safe(as_map(where).get("node")),
                    "cards": [as_int(c) for c in as_list(as_map(where).get("cards"))],
                }
                for name, where in as_map(entry.get(key)).items()
            }
            for key in ("placements", "evicted_from")
        )
        plans.append(
            {
                key: [_safe(n) for n in as_list(entry.get(key))]
                for key in ("rescues", "evict", "unowned")
            }
            | {"placements": placements, "evicted_from": evicted_from}
        )
    summary = as_map(plan.get("summary"))
    figures = ("evictions", "rescued_pods", "rescued_gpus")
    return {"plans": plans, "summary": {key: fmt_num(summary.get(key)) for key in figures}}
