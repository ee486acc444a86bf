"""Volcano's own session (the `volcano` harness, v1.14.1) beside the advisor's job cycle
(`advisor.core.gang.diagnose_jobs`), on generated clusters with gangs (docs/conformance.md):
per Pending pod placed or not and the node (within upstream's tied set), per PodGroup with
Pending members its state (placed, rolled-back, admitted), and per pod both sides leave
Pending its cause class (`upstream_class`, `advisor_class`).

The clusters keep to what v1.14.1 and v1.15.1 decide alike: the legacy card order (v1.14.1
walks cards from the last whatever the policy, `vgpu/utils.go`). One difference remains:
v1.14.1 keeps the cards of a vGPU pod whose placement a discarded gang undid
(`vgpu/device_info.go` Release does nothing and Allocate leaves the in-memory pod without
its `vgpu-ids-new`, so `NodeInfo.RemoveTask`'s SubResource finds nothing to give back);
v1.15.1, which the advisor follows, gives them back. The harness names such pods
(`leaked`), and a cluster with any is counted apart, as explained.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, NamedTuple

from advisor.core.diagnosis import PodDiagnosis
from advisor.core.gang import JobsDiagnosis, diagnose_jobs
from advisor.scenario import ScenarioError, scenario_from_data
from conformance import harness
from conformance.generate import generate
from conformance.session_queues import add_queues


def generate_gangs(seed: int) -> dict[str, Any]:
    """A volcano-vgpu cluster (generate.py's nodes and running pods) whose Pending pods
    come in PodGroups of min_member 2 to 8, some members alike, some groups short of
    members, beside pods of no group; on most, queues (conformance/session_queues.py); some
    groups with their status.phase given (the others inferred), some with task roles, some
    named as a Volcano Job names its pods. On three in ten, MIG (generate_mig.py: cards in
    MIG mode under the mixed strategy, running and Pending MIG pods, grouped as the others)."""
    mig = random.Random(seed * 7919 + 7).random() < 0.3
    data = generate(seed, max_pending=10, profile="volcano-vgpu", mig=mig)
    data["policy"] = {"card": "legacy"}
    data["scheduler"].pop("schedule_weight", None)
    rng = random.Random(seed * 7919 + 1)
    pending = [p for p in data["pods"] if "node" not in p]
    groups: list[dict[str, Any]] = []
    start = 0
    while start < len(pending):
        size = rng.randint(1, 6)
        members = pending[start : start + size]
        start += size
        if len(members) < 2 and rng.random() < 0.5:
            continue  # a pod of no group
        name = f"ml/gang-{len(groups)}"
        if rng.random() < 0.5:  # members alike: a gang of one template
            for m in members[1:]:
                for key in ("request", "resources", "priority", "node_selector", "affinity"):
                    m.pop(key, None)
                    if key in members[0]:
                        m[key] = members[0][key]
        for m in members:
            m["group"] = name
        low = max(2, len(members) - 1)
        min_member = rng.randint(min(low, 8), min(len(members) + 1, 8))
        group: dict[str, Any] = {"name": name, "min_member": min_member}
        priority = rng.choice((0, 0, 10, 100))
        if priority:
            group["priority"] = priority
        groups.append(group)
    if groups:
        data["groups"] = groups
    add_queues(data, random.Random(seed * 7919 + 2))  # its own draws: the gangs stay as they were
    phases = random.Random(seed * 7919 + 4)
    for group in groups:  # an admitted one (Inqueue) skips enqueue, which judges only
        # minResources: those groups are given a phase most often
        weights = (2, 6, 2, 1, 1, 1) if "min_resources" in group else (9, 6, 3, 1, 1, 1)
        (phase,) = phases.choices(PHASES, weights=weights)
        if phase is not None:
            group["phase"] = phase
    add_roles(data, random.Random(seed * 7919 + 5))
    add_job_names(data, random.Random(seed * 7919 + 6))
    return data


def add_job_names(data: dict[str, Any], rng: random.Random) -> None:
    """Some groups' Pending pods renamed as a Volcano Job names them,
    `<job>-<task>-<index>` (their own draws), the indices shuffled against the listing
    (creation) order and some past 9, so CompareTask's order by index
    (controllers/job/helpers/helpers.go) departs from creation."""
    members: dict[str, list[dict[str, Any]]] = {}
    for pod in data["pods"]:
        if "group" in pod and "node" not in pod:
            members.setdefault(pod["group"], []).append(pod)
    for group, pods in members.items():
        if len(pods) < 2 or rng.random() < 0.6:
            continue
        job = group.split("/", 1)[1]
        indices = rng.sample(range(12), len(pods)) if len(pods) <= 12 else list(range(len(pods)))
        for pod, index in zip(pods, indices, strict=True):
            task = pod.get("role", "worker")
            pod["name"] = f"{group.split('/', 1)[0]}/{job}-{task}-{index}"


def add_roles(data: dict[str, Any], rng: random.Random) -> None:
    """Task roles on some groups (their own draws: the rest stays as it was): each member a
    `ps` or a `worker` (`volcano.sh/task-spec`), and on most of those a `min_task_member`
    at, below or above what the members give, so Volcano's per-role checks, its skipping
    of a failed role's tasks and NeedContinueAllocating's two rules all come up."""
    members: dict[str, list[dict[str, Any]]] = {}
    for pod in data["pods"]:
        if "group" in pod and "node" not in pod:
            members.setdefault(pod["group"], []).append(pod)
    for group in data.get("groups", []):
        pods = members.get(group["name"], [])
        if len(pods) < 2 or rng.random() < 0.6:
            continue
        for pod in pods:
            pod["role"] = "ps" if rng.random() < 0.3 else "worker"
        if rng.random() < 0.7:
            ps = sum(1 for p in pods if p["role"] == "ps")
            wanted = {"ps": rng.randint(0, ps + 1), "worker": rng.randint(0, len(pods) - ps + 1)}
            group["min_task_member"] = {r: n for r, n in wanted.items() if n or rng.random() < 0.5}


PHASES = (None, "Inqueue", "Pending", "Running", "Unknown", "Completed")


def advisor_side(
    data: dict[str, Any],
) -> tuple[dict[str, str | None], dict[str, str], frozenset[str]]:
    """The advisor's node (None: not placed) per Pending pod, state per group, and the
    groups it leaves to the node cycle where Volcano's enqueue refuses them for the
    cluster's size (docs/design.md §10.2)."""
    return _sides(_advisor(data))


def _advisor(data: dict[str, Any]) -> JobsDiagnosis:
    return diagnose_jobs(scenario_from_data(data, "<generated>", "volcano-vgpu"))


def _sides(
    jobs: JobsDiagnosis,
) -> tuple[dict[str, str | None], dict[str, str], frozenset[str]]:
    nodes = {
        v.pod.name: (v.placement.node if v.placement is not None else None)
        for v in jobs.diagnosis.pods
    }
    return nodes, {g.name: g.state for g in jobs.groups}, jobs.left_to_nodes


EXPLAINED = "explained: "  # a difference docs/conformance.md explains, counted apart
CAUSE = "cause "  # what Volcano records for a pod differs (`causes`)
REACHED = "reached "  # whether allocate reached a pod differs (`causes`)

# The classes of what Volcano records for a pod left Pending (docs/conformance.md "Cause
# classes"): a fit error of its own, per task allocate tried on the nodes (the predicates'
# words say nothing more of why the nodes refused, so the advisor's node-level causes are
# one class), its queue's refusal, or its job's FitError.
CLASSES = ("placed", "nodes", "gang", "queue")


def own_class(verdict: PodDiagnosis) -> str:
    """The class of the advisor's own cause for the pod (what it explains it by)."""
    if verdict.placement is not None:
        return "placed"
    if verdict.cause == "gang":
        return "gang"
    if verdict.cause in ("queue", "quota"):
        return "queue"
    return "nodes"  # node-resources, fragmentation, capacity, unsatisfiable, invalid


def advisor_class(verdict: PodDiagnosis, jobs: JobsDiagnosis) -> str:
    """The class of what Volcano records for the pod, as the advisor's cycle predicts it.
    Its own cause, but: a pod whose queue refuses it for the cluster's size alone, or whose
    job enqueue leaves Pending, which the advisor words by its nodes (docs/design.md
    §10.2), is its queue's; a member allocate never reached (`JobsDiagnosis.reached`),
    which keeps its own cause where it fails on its own (§10.3), gets its job's FitError,
    one whose queue allocate skips as overused too (the advisor's cause `queue`: allocate
    `continue`s past the queue without asking its Allocatable)."""
    name = verdict.pod.name
    if verdict.placement is None:
        left = jobs.left_to_nodes
        if name in jobs.sized or name in left or jobs.group_of.get(name) in left:
            return "queue"
        if name in jobs.not_admitted:
            return "queue"
        if name not in jobs.reached and verdict.cause != "quota":
            return "gang"  # its queue overused included: allocate skips it (no Allocatable)
    return own_class(verdict)


def upstream_class(pod: dict[str, Any], states: dict[str, str]) -> str:
    """The class of Volcano's outcome for a pod (the harness's fields): bound; a fit error
    of its own (allocate.go allocateResourcesForTasks, `job.NodesFitErrors[task.UID]`,
    only for a task tried on the nodes); its queue refused it (`ssn.Allocatable`, no fit
    error) or enqueue left its job Pending; else its job held it (invalid, discarded, or
    stopped before it: cache.go RecordJobStatusEvent writes `job.FitError()` on it)."""
    if pod["node"] is not None:
        return "placed"
    if not pod.get("job"):
        return "missing"  # not in the session
    if pod.get("fit_error") is not None:
        return "nodes"
    if pod.get("queue_refused") or states.get(pod["job"]) == "not-admitted":
        return "queue"
    return "gang"


def differences(data: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """What differs, one line per pod or group; a group's state the advisor's design words
    otherwise (enqueue's refusal for the cluster's size) starts with EXPLAINED."""
    return _differences(_sides(_advisor(data)), theirs)


def _differences(
    sides: tuple[dict[str, str | None], dict[str, str], frozenset[str]], theirs: dict[str, Any]
) -> list[str]:
    nodes, states, left = sides
    out: list[str] = []
    for up in theirs["pods"]:
        pod = up["pod"]
        mine = nodes.get(pod, "missing")
        if mine == "missing":
            out.append(f"{pod}: not in the advisor's diagnosis")
        elif (mine is None) != (up["node"] is None):
            out.append(f"{pod}: advisor {mine or 'pending'}, upstream {up['node'] or 'pending'}")
        elif mine is not None and mine not in (up.get("tied") or [up["node"]]):
            out.append(f"{pod}: advisor node {mine}, upstream one of {up['tied']}")
    for group in theirs["groups"]:
        name = group["name"]
        if name.split("/", 1)[1].startswith("pg-"):
            continue  # a pod's own group: its pod is compared above
        if states.get(name) != group["state"]:
            line = f"group {name}: advisor {states.get(name)}, upstream {group['state']}"
            explained = name in left and group["state"] == "not-admitted"
            out.append(EXPLAINED + line if explained else line)
    return out


class Causes(NamedTuple):
    """Over the pods both sides leave Pending: the lines where the advisor's prediction
    differs from Volcano (CAUSE: what it records; REACHED: whether allocate reached the
    pod), upstream's class of each pod compared, and per class pair where the advisor's
    own cause differs from the record it predicts ("nodes (unsatisfiable) -> gang")."""

    diffs: list[str]
    classes: Counter[str]
    worded: Counter[str]


def causes(jobs: JobsDiagnosis, theirs: dict[str, Any]) -> Causes:
    """Per pod both sides leave Pending, what Volcano records for it against the
    advisor's prediction, and whether allocate reached it (the harness's `tried`)."""
    verdicts = {v.pod.name: v for v in jobs.diagnosis.pods}
    states = {g["name"]: g["state"] for g in theirs["groups"]}
    out: list[str] = []
    counted: Counter[str] = Counter()
    worded: Counter[str] = Counter()
    for up in theirs["pods"]:
        verdict = verdicts.get(up["pod"])
        if verdict is None or verdict.placement is not None or up["node"] is not None:
            continue  # placed on either side: compared above
        theirs_class, mine = upstream_class(up, states), advisor_class(verdict, jobs)
        counted[theirs_class] += 1
        reached = up["pod"] in jobs.reached
        if reached != bool(up.get("tried")) and up.get("job"):
            out.append(f"{REACHED}{up['pod']}: advisor {reached}, upstream {bool(up['tried'])}")
        if theirs_class != mine:
            out.append(
                f"{CAUSE}{up['pod']}: advisor {mine} ({verdict.cause}), upstream {theirs_class}"
            )
        elif own_class(verdict) != mine:
            worded[f"{own_class(verdict)} ({verdict.cause}) -> {mine}"] += 1
    return Causes(out, counted, worded)


class Row(NamedTuple):
    pods: int  # Pending pods
    diffs: list[str]  # `differences`, then `causes`' lines
    leaked: bool  # whether v1.14.1 kept a discarded pod's cards
    classes: Counter[str]  # upstream's class of each pod both sides leave Pending
    worded: Counter[str]  # `Causes.worded`: the advisor's own cause beside the record

    @property
    def apart(self) -> bool:
        """Counted apart: v1.14.1 kept a discarded pod's cards and something differs."""
        return self.leaked and bool(self.diffs)


def check(datas: list[dict[str, Any]]) -> list[Row]:
    """Each cluster's row: what differs, pods and causes."""
    results = harness.run_scenarios("volcano", datas)
    rows = []
    for data, result in zip(datas, results, strict=True):
        jobs = _advisor(data)
        found = causes(jobs, result)
        diffs = _differences(_sides(jobs), result) + found.diffs
        rows.append(Row(len(result["pods"]), diffs, bool(result["leaked"]), *found[1:]))
    return rows


def disagrees(data: dict[str, Any]) -> bool:
    try:
        _, diffs, leaked, _, _ = check([data])[0]
    except ScenarioError:
        return False
    return not leaked and any(not d.startswith(EXPLAINED) for d in diffs)
