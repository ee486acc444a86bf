"""Gangs in the simulated cycle (advisor.core.gang, docs/design.md §10.2): Volcano v1.15.1's
allocate gang cases converted (pkg/scheduler/actions/allocate/allocate_test.go, TestAllocate,
cited by name; their cpu requests and node selectors become the pods' `resources` and
`node_selector` beside a GPU request), and hand cases for what they leave out."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.diagnosis import CAUSES, Diagnosis
from advisor.core.gang import diagnose_jobs
from advisor.core.jobs import GroupOutcome
from advisor.scenario import load_scenario, scenario_from_data

EXAMPLES = Path(__file__).resolve().parents[3] / "advisor" / "examples"
CARD = {"index": 0, "memory_mib": 16384}


def cluster(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    profile: str = "volcano-vgpu",
) -> Any:
    data = {"scheduler": {"profile": profile}, "nodes": nodes, "pods": pods, "groups": groups}
    return scenario_from_data(data, "gang.yaml")


def node(name: str, cpu: str = "8", cards: int = 1, role: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": 10},
        "cards": [{"index": i, "memory_mib": 16384} for i in range(cards)],
    }
    if role is not None:
        out["labels"] = {"nodeRole": role}
    return out


def pod(
    name: str,
    group: str | None = "c1/pg1",
    *,
    memory_mib: int = 1024,
    cpu: str = "1",
    role: str | None = None,
    priority: int = 0,
    on: tuple[str, int] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "request": {"gpus": 1, "memory_mib": memory_mib},
        "resources": {"cpu": cpu, "memory": "1Gi"},
    }
    if group is not None:
        out["group"] = group
    if role is not None:
        out["node_selector"] = {"nodeRole": role}
    if priority:
        out["priority"] = priority
    if on is not None:
        out["node"], out["cards"] = on[0], [on[1]]
    return out


def verdicts(result: Any) -> dict[str, tuple[str, str | None]]:
    return {
        d.pod.name: (d.cause, d.placement.node if d.placement else None)
        for d in result.diagnosis.pods
    }


# -- Volcano's TestAllocate gang cases -------------------------------------------------------


def test_prepredicate_failed_and_tasks_are_not_used_up_continue_on_until_min_member_meet() -> None:
    """TestAllocate "prepredicate failed and tasks are not used up, continue on until min
    member meet": minMember 2, n1 (master, 1 cpu) and n2 (worker, 1 cpu); p0 and p2 bind, the
    second of each role finds its node full, and the job is ready at 2."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "1", role="master"), node("n2", "1", role="worker")],
            [
                pod("c1/p0", role="master"),
                pod("c1/p1", role="master"),
                pod("c1/p2", role="worker"),
                pod("c1/p3", role="worker"),
            ],
            [{"name": "c1/pg1", "min_member": 2}],
        )
    )
    assert verdicts(result) == {
        "c1/p0": ("schedulable", "n1"),
        "c1/p1": ("node-resources", None),
        "c1/p2": ("schedulable", "n2"),
        "c1/p3": ("node-resources", None),
    }
    assert result.groups == (GroupOutcome("c1/pg1", "default", 2, 0, 4, "placed"),)


def test_min_member_equal_to_the_tasks_cannot_be_allocated_so_nothing_binds() -> None:
    """TestAllocate "master's min member can not be allocated, break from allocating",
    without task roles (not modelled): the job needs all four, so NeedContinueAllocating
    (v1.15.1 api/job_info.go) is false (MinAvailable == len(Tasks)) and allocate's
    allocateResourcesForTasks `break`s at the first task no node takes: p0 fits n1, p1 finds
    n1 full, p2 and p3 are never tried; p0's placement is discarded, nothing binds."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "1", role="master"), node("n2", "1", role="worker")],
            [
                pod("c1/p0", role="master"),
                pod("c1/p1", role="master"),
                pod("c1/p2", role="worker"),
                pod("c1/p3", role="worker"),
            ],
            [{"name": "c1/pg1", "min_member": 4}],
        )
    )
    causes = verdicts(result)
    assert causes == {
        "c1/p0": ("gang", None),
        "c1/p1": ("node-resources", None),
        "c1/p2": ("gang", None),
        "c1/p3": ("gang", None),
    }
    by_name = {d.pod.name: d for d in result.diagnosis.pods}
    # api/job_info.go TaskSchedulingReason and FitError, gang.go's condition
    fit_error = (
        "pod group is not ready, 4 Pending, 4 minAvailable; Pending: 1 Schedulable, "
        "3 Unschedulable. Origin reason is p1: 0/2 nodes are unavailable: "
    )
    assert by_name["c1/p0"].message.startswith(
        "Pod c1/p0 can possibly be assigned to n1, once minAvailable is satisfied "
        f"(3/4 tasks in gang unschedulable: {fit_error}"
    )
    # never tried: no fit error of its own, so its pod condition is the job's FitError
    # (cache/cache.go RecordJobStatusEvent: msg empty, baseErrorMessage = job.FitError())
    assert by_name["c1/p2"].message.startswith(fit_error)
    assert by_name["c1/p3"].message == by_name["c1/p2"].message
    assert result.groups[0].state == "rolled-back"
    assert result.diagnosis.summary["gang"] == 3


def test_a_failure_ends_the_turn_only_when_every_member_is_needed() -> None:
    """NeedContinueAllocating (v1.15.1 api/job_info.go): min_member 2 of three members, the
    first (priority 10) fits nowhere, the turn goes on and the other two place; with
    min_member 3 the turn ends at the first, and neither of the others is tried (`admitted`:
    nothing was placed, so nothing is rolled back)."""
    pods = [
        pod("ml/w-0", "ml/job", memory_mib=32768, priority=10),
        pod("ml/w-1", "ml/job"),
        pod("ml/w-2", "ml/job"),
    ]
    two = diagnose_jobs(cluster([node("a", cards=2)], pods, [{"name": "ml/job", "min_member": 2}]))
    assert [v[0] for v in verdicts(two).values()] == ["unsatisfiable", "schedulable", "schedulable"]
    assert two.groups[0].state == "placed"
    three = diagnose_jobs(
        cluster([node("a", cards=2)], pods, [{"name": "ml/job", "min_member": 3}])
    )
    assert [v[0] for v in verdicts(three).values()] == ["unsatisfiable", "gang", "gang"]
    assert three.groups[0].state == "admitted"
    assert three.diagnosis.pods[1].message == (
        "pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Unschedulable. "
        f"Origin reason is w-0: {three.diagnosis.pods[0].message}"
    )


def test_prepredicate_failed_node_selector_does_not_match() -> None:
    """TestAllocate "prepredicate failed: node selector does not match": minMember 1, the
    only node is a worker; p1 (master) never fits, p2 binds."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "2", role="worker")],
            [pod("c1/p1", role="master"), pod("c1/p2", role="worker")],
            [{"name": "c1/pg1", "min_member": 1}],
        )
    )
    assert verdicts(result) == {
        "c1/p1": ("unsatisfiable", None),
        "c1/p2": ("schedulable", "n1"),
    }


def test_one_job_with_two_pods_on_one_node() -> None:
    """TestAllocate "one Job with two Pods on one node": minMember 0, both bind."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "2", cards=2)],
            [pod("c1/p1"), pod("c1/p2")],
            [{"name": "c1/pg1", "min_member": 0}],
        )
    )
    assert verdicts(result) == {"c1/p1": ("schedulable", "n1"), "c1/p2": ("schedulable", "n1")}


def test_ready_jobs_take_one_task_per_turn() -> None:
    """A variation of TestAllocate "two Jobs on one node" in one queue: each job is ready
    after one task and goes back to the queue, so the jobs alternate (pg1-p-1, pg2-p-1),
    where §3's one-pod cycle would have given pg1 both cards."""
    nodes = [node("n1", "8", cards=2)]
    pods = [
        pod("c1/pg1-p-1", "c1/pg1", memory_mib=16384),
        pod("c1/pg1-p-2", "c1/pg1", memory_mib=16384),
        pod("c1/pg2-p-1", "c1/pg2", memory_mib=16384),
        pod("c1/pg2-p-2", "c1/pg2", memory_mib=16384),
    ]
    groups = [{"name": "c1/pg1", "min_member": 1}, {"name": "c1/pg2", "min_member": 1}]
    result = diagnose_jobs(cluster(nodes, pods, groups))
    placed = {name for name, (cause, _) in verdicts(result).items() if cause == "schedulable"}
    assert placed == {"c1/pg1-p-1", "c1/pg2-p-1"}
    one_pod = diagnose(cluster(nodes, pods, groups))
    assert {d.pod.name for d in one_pod.pods if d.cause == "schedulable"} == {
        "c1/pg1-p-1",
        "c1/pg1-p-2",
    }


# -- hand cases ------------------------------------------------------------------------------


def test_not_enough_valid_tasks() -> None:
    """gang.go validJobFn: running + Pending below minMember; no member is tried."""
    result = diagnose_jobs(
        cluster(
            [node("n1", cards=2)],
            [pod("c1/p0", on=("n1", 0)), pod("c1/p1")],
            [{"name": "c1/pg1", "min_member": 3}],
        )
    )
    (only,) = result.diagnosis.pods
    assert (only.cause, only.message) == (
        "gang",
        "Not enough valid tasks for gang-scheduling, valid: 2, min: 3",
    )
    assert result.groups == (GroupOutcome("c1/pg1", "default", 3, 1, 1, "admitted"),)


def test_a_gang_blocked_by_fragmentation() -> None:
    """Two nodes of three cards, card 0 free and cards 1 and 2 half used: two members of
    16 GiB fit (each node's card 0), the third finds 16 GiB free on each node but split over
    two cards (fragmentation); the job is rolled back, the two that fitted read `gang`, the
    third keeps its own cause."""
    nodes = [node("a", cards=3), node("b", cards=3)]
    held = [
        {
            "name": f"x/held-{n}-{c}",
            "node": n,
            "cards": [c],
            "request": {"gpus": 1, "memory_mib": 8192},
        }
        for n in ("a", "b")
        for c in (1, 2)
    ]
    members = [pod(f"ml/w-{i}", "ml/job", memory_mib=16384) for i in range(3)]
    result = diagnose_jobs(
        cluster(nodes, held + members, [{"name": "ml/job", "min_member": 3}], profile="cce")
    )
    assert verdicts(result) == {
        "ml/w-0": ("gang", None),
        "ml/w-1": ("gang", None),
        "ml/w-2": ("fragmentation", None),
    }
    w0 = result.diagnosis.pods[0]
    assert "3 Pending, 3 minAvailable; Pending: 1 Unschedulable, 2 Schedulable" in w0.message
    assert "Origin reason is w-2: " in w0.message


def test_a_rolled_back_gang_frees_its_cards_for_another_job() -> None:
    """The gang (priority 100) places two members, needs three, and is rolled back: the
    lower-priority single pod behind it then fits; the one-pod cycle would have kept the
    gang's two placements and left it Pending."""
    nodes = [node("a", cards=2)]
    pods = [
        pod("ml/w-0", "ml/job", memory_mib=16384, priority=100),
        pod("ml/w-1", "ml/job", memory_mib=16384, priority=100),
        pod("ml/w-2", "ml/job", memory_mib=16384, priority=100),
        pod("web/single", None, memory_mib=16384),
    ]
    groups = [{"name": "ml/job", "min_member": 3, "priority": 100}]
    result = diagnose_jobs(cluster(nodes, pods, groups, profile="cce"))
    assert verdicts(result)["web/single"] == ("schedulable", "a")
    assert [v[0] for k, v in verdicts(result).items() if k.startswith("ml/")] == [
        "gang",
        "gang",
        "capacity",
    ]
    one_pod = {d.pod.name: d.cause for d in diagnose(cluster(nodes, pods, groups)).pods}
    assert one_pod["web/single"] != "schedulable"


@pytest.mark.parametrize(("members", "state"), [(2, "placed"), (3, "rolled-back")])
def test_exactly_min_member(members: int, state: str) -> None:
    """Two cards, min_member 2: two members place together; a third member's failure does
    not undo a ready job, but with min_member 3 all three are needed."""
    nodes = [node("a", cards=2)]
    pods = [pod(f"ml/w-{i}", "ml/job", memory_mib=16384) for i in range(3)]
    result = diagnose_jobs(cluster(nodes, pods, [{"name": "ml/job", "min_member": members}]))
    assert result.groups[0].state == state
    placed = [k for k, v in verdicts(result).items() if v[0] == "schedulable"]
    assert placed == (["ml/w-0", "ml/w-1"] if state == "placed" else [])


def test_under_kube_scheduler_groups_change_nothing() -> None:
    """hami runs kube-scheduler's session: no gang, the one-pod cycle's verdicts."""
    nodes = [node("a", cards=2)]
    pods = [pod(f"ml/w-{i}", "ml/job", memory_mib=16384) for i in range(3)]
    c = cluster(nodes, pods, [{"name": "ml/job", "min_member": 3}], profile="hami")
    result = diagnose_jobs(c)
    # the same cycle; only the preemption verdicts (core.preemption) are added
    assert without_preemption(result.diagnosis) == diagnose(c)
    assert result.groups == ()


# the examples without PodGroups (training.yaml's gangs are judged in its own tests)
UNGROUPED = [p for p in sorted(EXAMPLES.glob("*.yaml")) if not load_scenario(p).jobs.groups]


@pytest.mark.parametrize("example", UNGROUPED, ids=lambda p: p.name)
def test_without_groups_the_job_cycle_is_the_one_pod_cycle(example: Path) -> None:
    c = load_scenario(example)
    assert without_preemption(diagnose_jobs(c).diagnosis) == diagnose(c)


def without_preemption(diagnosis: Diagnosis) -> Diagnosis:
    """The cycle's verdicts alone: the preemption verdicts (core.preemption) cleared."""
    return replace(diagnosis, pods=tuple(replace(v, preemption=None) for v in diagnosis.pods))


# -- in the outputs ------------------------------------------------------------------------


def fragmented_gang() -> dict[str, Any]:
    """`test_a_gang_blocked_by_fragmentation`'s cluster as a scenario file's data."""
    held = [
        {
            "name": f"x/held-{n}-{c}",
            "node": n,
            "cards": [c],
            "request": {"gpus": 1, "memory_mib": 8192},
        }
        for n in ("a", "b")
        for c in (1, 2)
    ]
    return {
        "scheduler": {"profile": "cce"},
        "nodes": [node("a", cards=3), node("b", cards=3)],
        "pods": held + [pod(f"ml/w-{i}", "ml/job", memory_mib=16384) for i in range(3)],
        "groups": [{"name": "ml/job", "min_member": 3}],
    }


def test_every_output_tells_the_gang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """diagnose's JSON (each Pending pod's `group`, the `groups` list, `gang` in the
    summary), conforming to the shipped schema; its Markdown and HTML, the report's pages and
    the plan say the same; the plan rescues the gang whole, and the report advises it."""
    from advisor.cli import main
    from advisor.schemas import DIAGNOSIS_SCHEMA, REPORT_SCHEMA
    from tests.advisor.test_schemas import conforms

    scenario = tmp_path / "gang.yaml"
    scenario.write_text(json.dumps(fragmented_gang()))
    assert main(["diagnose", "--scenario", str(scenario), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert conforms(data, DIAGNOSIS_SCHEMA) == []
    assert [(p["pod"], p["cause"], p["group"]) for p in data["pods"]] == [
        ("ml/w-0", "gang", "ml/job"),
        ("ml/w-1", "gang", "ml/job"),
        ("ml/w-2", "fragmentation", "ml/job"),
    ]
    assert data["groups"] == [
        {
            "name": "ml/job",
            "queue": "default",
            "min_member": 3,
            "ready": 0,
            "pending": 3,
            "state": "rolled-back",
        }
    ]
    assert data["summary"]["gang"] == 2
    assert data["summary"]["pending"] == 3
    for fmt in ("markdown", "html"):
        assert main(["diagnose", "--scenario", str(scenario), "--format", fmt]) == 0
        assert "2 gang" in capsys.readouterr().out or fmt == "html"
    out = tmp_path / "report"
    assert main(["report", "--scenario", str(scenario), "--output-dir", str(out)]) == 0
    # the cron's one line counts the gang too, and --fail-on takes the job layer's causes
    assert "3 Pending GPU pods (1 fragmentation, 2 gang)" in capsys.readouterr().err
    fail_on = ["--fail-on", "gang", "--fail-threshold", "2"]
    assert main(["report", "--scenario", str(scenario), "--output-dir", str(out), *fail_on]) == 1
    assert "--fail-on gang: 2 Pending GPU pods" in capsys.readouterr().err
    report = json.loads((out / "report.json").read_text())
    assert conforms(report, REPORT_SCHEMA) == []
    assert report["diagnosis"]["summary"]["gang"] == 2
    assert "gang" in (out / "report.md").read_text()
    # one plan rescues the gang whole (§10.4), and the report advises that plan for each
    assert main(["plan", "--scenario", str(scenario), "--format", "json"]) == 0
    plans = json.loads(capsys.readouterr().out)
    assert [sorted(p["rescues"]) for p in plans["plans"]] == [["ml/w-0", "ml/w-1", "ml/w-2"]]
    assert [p["rescues"] for p in report["plan"]["plans"]] == [p["rescues"] for p in plans["plans"]]
    advice = {p["pod"]: p["advice"]["key"] for p in report["diagnosis"]["pods"]}
    assert advice == {"ml/w-0": "rebalance", "ml/w-1": "rebalance", "ml/w-2": "fragmentation"}


def test_the_scheduler_what_if_counts_the_gang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`whatif --scheduler` counts every cause per profile, the job layer's too: the counts
    add up to the Pending pods, and the Markdown grows a `gang` column."""
    from advisor.cli import main

    scenario = tmp_path / "gang.yaml"
    scenario.write_text(json.dumps(fragmented_gang()))
    profiles = ["--scheduler", "cce,hami"]
    assert main(["whatif", "--scenario", str(scenario), *profiles, "--format", "json"]) == 0
    entries = {e["profile"]: e for e in json.loads(capsys.readouterr().out)["schedulers"]}
    assert entries["cce"]["pending"]["gang"] == 2
    assert "gang" not in entries["hami"]["pending"]  # kube-scheduler knows no PodGroup
    assert all(sum(e["pending"].values()) == 3 for e in entries.values())
    assert main(["whatif", "--scenario", str(scenario), *profiles]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "| scheduler" in line)
    assert header.split(" | ")[5:12] == [*CAUSES, "gang"]


def test_a_member_never_tried_keeps_a_cause_of_its_own() -> None:
    """§10.3: a member that fails on its own keeps its own cause. p1's failure ends the turn
    (every member needed), so p2 and p3 are never tried; p2 asks more memory than any card
    has, which no cycle changes, so it reads `unsatisfiable`, not the job's FitError; p3
    does read the FitError. The same holds where the gang is not valid. (n1's other pod
    takes the cpu p1 lacks: with n1 of 1 cpu instead, Volcano's queue would refuse p1 for
    the cluster's size and go on to p2 and p3, allocate.go `continue`.)"""
    busy = {
        **node("n1", "2"),
        "other_pods": [{"name": "kube-system/ds", "resources": {"cpu": "1"}}],
    }
    result = diagnose_jobs(
        cluster(
            [busy],
            [
                pod("c1/p0"),
                pod("c1/p1"),
                pod("c1/p2", memory_mib=32768),
                pod("c1/p3"),
            ],
            [{"name": "c1/pg1", "min_member": 4}],
        )
    )
    assert verdicts(result) == {
        "c1/p0": ("gang", None),
        "c1/p1": ("node-resources", None),
        "c1/p2": ("unsatisfiable", None),
        "c1/p3": ("gang", None),
    }
    invalid = diagnose_jobs(
        cluster(
            [node("n1", cards=2)],
            [pod("c1/p0"), pod("c1/p1", memory_mib=32768)],
            [{"name": "c1/pg1", "min_member": 3}],
        )
    )
    assert verdicts(invalid) == {"c1/p0": ("gang", None), "c1/p1": ("unsatisfiable", None)}
