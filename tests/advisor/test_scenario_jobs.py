"""The job layer's scenario keys (docs/design.md §10.1): read strictly, one line per problem
naming the file and the path, defaults owned by the profiles, older scenarios unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.core.jobs import (
    CCE_ACTIONS,
    UPSTREAM_ACTIONS,
    Gang,
    Group,
    Queue,
    not_modelled,
)
from advisor.core.profiles import profile_for
from advisor.scenario import ScenarioError, scenario_from_data, scenario_to_data

EXAMPLES = Path(__file__).resolve().parents[2] / "advisor" / "examples"
BASE: dict[str, Any] = {
    "scheduler": {"profile": "cce"},
    "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384}]}],
    "pods": [{"name": "ml/a", "request": {"gpus": 1, "memory_mib": 1024}}],
}


def load(**changes: Any) -> Any:
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        if key == "pod":
            data["pods"][0].update(value)
        elif key == "scheduler":
            data["scheduler"].update(value)
        else:
            data[key] = value
    return scenario_from_data(data, "s.yaml")


def test_the_profiles_own_their_sessions_defaults() -> None:
    # Volcano's own default (pkg/scheduler/util.go DefaultSchedulerConf, v1.15.1) and the
    # gang options' defaults (plugins/defaults.go ApplyPluginConfDefaults: true); CCE's
    # add-on runs no enqueue and turns both gang options off.
    volcano, cce, hami = (profile_for(n).session for n in ("volcano-vgpu", "cce", "hami"))
    assert (volcano.kind, volcano.default_actions, volcano.default_gang) == (
        "volcano",
        UPSTREAM_ACTIONS,
        (True, True),
    )
    assert UPSTREAM_ACTIONS == ("enqueue", "allocate", "backfill")
    assert (cce.kind, cce.default_actions, cce.default_gang) == (
        "volcano",
        CCE_ACTIONS,
        (False, False),
    )
    assert CCE_ACTIONS == ("allocate", "backfill")
    assert (hami.kind, hami.default_actions) == ("kube-scheduler", ())


def test_keys_read_with_their_defaults() -> None:
    cluster = load(
        scheduler={"actions": ["allocate", "preempt"], "gang": {"job_starving": True}},
        queues=[{"name": "training", "capability": {"cpu": 64}}],
        groups=[{"name": "ml/job", "min_member": 4, "queue": "training"}],
        pod={"group": "ml/job", "preemption_policy": "Never"},
    )
    assert cluster.scheduler.actions == ("allocate", "preempt")
    assert cluster.scheduler.gang == Gang(None, True)
    assert cluster.scheduler.overcommit_factor is None
    (queue,) = cluster.jobs.queues
    assert queue == Queue("training", 1, {"cpu": "64"}, {}, True, 0, "Open")
    assert cluster.jobs.groups == (Group("ml/job", 4, "training", 0, {}),)
    pod = cluster.pods[0]
    assert (pod.group, pod.preemptable, pod.preemption_policy) == ("ml/job", True, "Never")
    assert not_modelled(cluster.jobs) == ["1 gang (ml/job)", "queue training"]


def test_the_queue_plugin_and_a_queues_deserved_read_and_write_back() -> None:
    """`queue_plugin: capacity` (the configuration's tiers name capacity in proportion's
    place) and a queue's `deserved` (capacity's spec.deserved) come back as written; the
    default, proportion, is not written."""
    cluster = load(
        scheduler={"queue_plugin": "capacity"},
        queues=[{"name": "training", "deserved": {"cpu": "8", "memory": "16Gi"}}],
    )
    assert cluster.scheduler.queue_plugin == "capacity"
    (queue,) = cluster.jobs.queues
    assert dict(queue.deserved) == {"cpu": "8", "memory": "16Gi"}
    written = scenario_to_data(cluster)
    assert written["scheduler"] == {"profile": "cce", "queue_plugin": "capacity"}
    assert written["queues"] == [
        {"name": "training", "weight": 1, "deserved": {"cpu": "8", "memory": "16Gi"}}
    ]
    assert scenario_from_data(written, "s.yaml") == cluster
    default = load(scheduler={"queue_plugin": "proportion"})
    assert default.scheduler.queue_plugin == "proportion"
    assert "scheduler" not in scenario_to_data(default)


def test_capacitys_hierarchy_and_a_queues_parent_read_and_write_back() -> None:
    """`enable_hierarchy` (capacity's enableHierarchy), `ancestor_reclaim_level` (its
    ancestorReclaimLevel argument) and a queue's `parent` (spec.parent,
    `root` or `default` though not listed: Volcano creates both) come back as written;
    absent, nothing is written."""
    cluster = load(
        scheduler={
            "queue_plugin": "capacity",
            "enable_hierarchy": True,
            "ancestor_reclaim_level": 2,
        },
        queues=[
            {"name": "ml", "parent": "root"},
            {"name": "training", "parent": "ml"},
            {"name": "dev", "parent": "default"},
            {"name": "other"},
        ],
    )
    assert cluster.scheduler.enable_hierarchy
    assert cluster.scheduler.ancestor_reclaim_level == 2
    assert [q.parent for q in cluster.jobs.queues] == ["root", "ml", "default", None]
    written = scenario_to_data(cluster)
    assert written["scheduler"] == {
        "profile": "cce",
        "queue_plugin": "capacity",
        "enable_hierarchy": True,
        "ancestor_reclaim_level": 2,
    }
    assert [q.get("parent") for q in written["queues"]] == ["root", "ml", "default", None]
    assert scenario_from_data(written, "s.yaml") == cluster
    flat = load(scheduler={"queue_plugin": "capacity", "enable_hierarchy": False})
    assert scenario_to_data(flat)["scheduler"] == {"profile": "cce", "queue_plugin": "capacity"}


def test_a_groups_phase_reads_and_writes_back_and_absent_is_inferred() -> None:
    """`phase` is the PodGroup's status.phase; absent, the model infers it (§10.2) and
    nothing is written."""
    cluster = load(groups=[{"name": "ml/g", "min_member": 2, "phase": "Inqueue"}])
    assert cluster.jobs.groups[0].phase == "Inqueue"
    written = scenario_to_data(cluster)
    assert written["groups"] == [{"name": "ml/g", "min_member": 2, "phase": "Inqueue"}]
    assert scenario_from_data(written, "s.yaml") == cluster
    inferred = load(groups=[{"name": "ml/g", "min_member": 2}])
    assert inferred.jobs.groups[0].phase is None
    assert "phase" not in scenario_to_data(inferred)["groups"][0]


def test_a_scenario_without_the_keys_writes_back_without_them() -> None:
    written = scenario_to_data(load())
    assert "scheduler" not in written
    assert not {"queues", "groups", "quotas"} & set(written)
    assert set(written["pods"][0]) == {"name", "request"}
    assert not_modelled(load().jobs) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"scheduler": {"actions": ["allocate", "elect"]}},
            "s.yaml: scheduler.actions[1]: expected one of enqueue, allocate, backfill, preempt,"
            " reclaim, gangpreempt, gangreclaim, shuffle, got the string 'elect'",
        ),
        ({"scheduler": {"actions": []}}, "s.yaml: scheduler.actions: Volcano needs at least one"),
        (
            {"scheduler": {"gang": {"preemptible": True}}},
            "s.yaml: scheduler.gang.preemptible: unknown key (known: job_starving, preemptable)",
        ),
        (
            {"scheduler": {"overcommit_factor": 0.9}},
            "s.yaml: scheduler.overcommit_factor: must be 1..1000 (Volcano ignores below 1)",
        ),
        (
            {"scheduler": {"preemption": True}},
            "s.yaml: scheduler.preemption: a hami setting; profile cce has none",
        ),
        (
            {"scheduler": {"queue_plugin": "drf"}},
            "s.yaml: scheduler.queue_plugin: expected one of proportion, capacity, got the "
            "string 'drf'",
        ),
        (
            {"scheduler": {"profile": "hami", "queue_plugin": "capacity"}},
            "s.yaml: scheduler.queue_plugin: a cce and volcano-vgpu setting; profile hami has",
        ),
        (
            {"queues": [{"name": "q", "deserved": {"cpu": "some"}}]},
            "s.yaml: queues[0].deserved.cpu: ",
        ),
        (
            {"scheduler": {"profile": "hami", "actions": ["allocate"]}},
            "s.yaml: scheduler.actions: a cce and volcano-vgpu setting; profile hami has none",
        ),
        (
            {"queues": [{"name": "q", "state": "Paused"}]},
            "s.yaml: queues[0].state: expected one of Open, Closed, Closing, got the string",
        ),
        ({"queues": [{"name": "q", "weight": 0}]}, "s.yaml: queues[0].weight: must be at least 1"),
        (
            {"groups": [{"name": "ml/g", "phase": "Scheduled"}]},
            "s.yaml: groups[0].phase: expected one of Pending, Inqueue, Running, Unknown, "
            "Completed, got the string 'Scheduled'",
        ),
        (
            {"queues": [{"name": "q"}, {"name": "q"}]},
            "s.yaml: queues[1].name: duplicate queue name 'q'",
        ),
        (
            {"queues": [{"name": "q", "capability": {"cpu": "lots"}}]},
            "s.yaml: queues[0].capability.cpu: ",
        ),
        (
            {"queues": [{"name": "q", "capability": {"cpu": 1.5}}]},
            "s.yaml: queues[0].capability.cpu: expected a quantity, got a number",
        ),
        ({"groups": [{"name": "job"}]}, "s.yaml: groups[0].name: expected namespace/name"),
        (
            {"groups": [{"name": "ml/job", "queue": "gone"}]},
            "s.yaml: groups[0].queue: unknown queue 'gone' (not under queues)",
        ),
        (
            {"groups": [{"name": "ml/job", "min_member": -1}]},
            "s.yaml: groups[0].min_member: must be at least 0, got -1",
        ),
        ({"quotas": [{"namespace": "ml"}]}, "s.yaml: quotas[0].hard: missing"),
        ({"pod": {"group": "ml/none"}}, "s.yaml: pods[0].group: unknown group 'ml/none'"),
        (
            {"groups": [{"name": "other/job"}], "pod": {"group": "other/job"}},
            "s.yaml: pods[0].group: group 'other/job' is not in the pod's namespace",
        ),
        (
            {"pod": {"preemption_policy": "Always"}},
            "s.yaml: pods[0].preemption_policy: expected one of PreemptLowerPriority, Never",
        ),
        ({"pod": {"preemptable": "false"}}, "s.yaml: pods[0].preemptable: expected true or"),
        (
            {"groups": [{"name": "ml/g", "min_task_member": {"worker": -1}}]},
            "s.yaml: groups[0].min_task_member.worker: must be at least 0",
        ),
        (
            {"groups": [{"name": "ml/g", "min_task_member": ["worker"]}]},
            "s.yaml: groups[0].min_task_member: expected a mapping, got a list",
        ),
        # capacity's hierarchy: Volcano's admission refuses these, its plugin all tasks
        (
            {"queues": [{"name": "q", "parent": "gone"}]},
            "s.yaml: queues[0].parent: unknown queue 'gone' (not under queues)",
        ),
        (
            {"queues": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]},
            "s.yaml: queues[0].parent: queues form a cycle: a -> b -> a",
        ),
        (
            {"queues": [{"name": "a", "parent": "a"}]},
            "s.yaml: queues[0].parent: queues form a cycle: a -> a",
        ),
        (
            {"queues": [{"name": "root", "parent": "default"}]},
            "s.yaml: queues[0].parent: the root queue has no parent",
        ),
        ({"queues": [{"name": "q", "parent": ""}]}, "s.yaml: queues[0].parent: expected a non"),
        (
            {"scheduler": {"enable_hierarchy": True}},
            "s.yaml: scheduler.enable_hierarchy: the capacity plugin's option: it needs "
            "queue_plugin: capacity",
        ),
        (
            {"scheduler": {"queue_plugin": "capacity", "enable_hierarchy": "yes"}},
            "s.yaml: scheduler.enable_hierarchy: expected true or false",
        ),
        (
            {"scheduler": {"queue_plugin": "capacity", "ancestor_reclaim_level": 1}},
            "s.yaml: scheduler.ancestor_reclaim_level: capacity's hierarchy argument: it needs "
            "enable_hierarchy: true",
        ),
        (
            {"scheduler": {"queue_plugin": "capacity", "ancestor_reclaim_level": -1}},
            "s.yaml: scheduler.ancestor_reclaim_level: must be at least 0",
        ),
    ],
)
def test_each_problem_is_one_line_naming_the_path(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        load(**changes)
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_not_modelled_names_what_a_verdict_would_depend_on() -> None:
    cluster = load(
        queues=[{"name": "default", "weight": 2}, {"name": "a"}, {"name": "b"}],
        groups=[{"name": f"ml/g{i}", "min_member": 2} for i in range(5)]
        + [{"name": "ml/single", "min_member": 1}],
        quotas=[{"namespace": "ml", "hard": {"cpu": "1"}}],
    )
    assert not_modelled(cluster.jobs) == [
        "5 gangs (ml/g0, ml/g1, ml/g2 and 2 more)",
        "queues a, b",
        "resource quotas in ml",
    ]


def test_task_roles_read_write_back_and_warn_where_volcano_checks_them() -> None:
    """`min_task_member` is a PodGroup's spec.minTaskMember, a pod's `role` its
    `volcano.sh/task-spec`. Volcano checks each role's own minimum only where minMember is
    not below their sum (v1.15.1 api/job_info.go CheckTaskValid, CheckTaskReady); the job
    cycle judges them with the gangs (core.roles), so such a group is named in the warning
    only where gangs are not judged, and the others never are."""
    groups = [
        {"name": "ml/checked", "min_member": 3, "min_task_member": {"master": 1, "worker": 2}},
        {"name": "ml/skipped", "min_member": 2, "min_task_member": {"master": 1, "worker": 2}},
        {"name": "ml/zero", "min_member": 1, "min_task_member": {"worker": 0}},
    ]
    cluster = load(groups=groups)
    assert dict(cluster.jobs.groups[0].min_task_member) == {"master": 1, "worker": 2}
    written = scenario_to_data(cluster)
    assert written["groups"][0]["min_task_member"] == {"master": 1, "worker": 2}
    assert scenario_from_data(written, "s.yaml") == cluster
    assert "min_task_member" not in scenario_to_data(load(groups=[{"name": "ml/g"}]))["groups"][0]
    assert [g.role_checked() for g in cluster.jobs.groups] == [True, False, False]
    assert not_modelled(cluster.jobs, gangs_judged=True, queues_judged=True) == []
    unjudged = not_modelled(cluster.jobs, gangs_judged=False, queues_judged=True)
    assert unjudged[-1] == "task roles' own minimums of ml/checked"
    pods = [
        {
            "name": "ml/w",
            "group": "ml/checked",
            "role": "worker",
            "request": {"gpus": 1, "memory_mib": 1024},
        }
    ]
    with_role = load(groups=groups, pods=pods)
    assert with_role.pods[0].role == "worker"
    assert scenario_to_data(with_role)["pods"][0]["role"] == "worker"
    assert scenario_from_data(scenario_to_data(with_role), "s.yaml") == with_role


def demo_with_jobs() -> tuple[dict[str, Any], dict[str, Any]]:
    """The demo scenario, and the same with a queue, a quota and ml/train-a (the pod the
    demo's plan evicts) running in a gang of two."""
    plain = yaml.safe_load((EXAMPLES / "demo.yaml").read_text())
    jobs = copy.deepcopy(plain)
    assert jobs["pods"][0]["name"] == "ml/train-a"
    jobs["queues"] = [{"name": "training", "weight": 2}]
    jobs["groups"] = [{"name": "ml/job", "min_member": 2, "queue": "training"}]
    jobs["quotas"] = [{"namespace": "ml", "hard": {"limits.nvidia.com/gpumem": "1000"}}]
    jobs["pods"][0]["group"] = "ml/job"
    return plain, jobs


# cce runs Volcano's session, which judges the gang and the queue (core.gang,
# core.session): HAMi's quota remains, which Volcano does not read.
WARNED = [
    "xgpu-advisor: warning: jobs read but not yet modelled: resource quotas in ml "
    "(verdicts leave them out)"
]


def run_both(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> list[tuple[str, list[str]]]:
    plain, jobs = demo_with_jobs()
    outputs = []
    for name, data in (("plain", plain), ("jobs", jobs)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        assert main([command, "--scenario", str(path), "--format", "json"]) == 0
        captured = capsys.readouterr()
        outputs.append((captured.out.replace("jobs.yaml", "plain.yaml"), captured.err.splitlines()))
    return outputs


@pytest.mark.parametrize("command", ["diagnose", "whatif"])
def test_until_modelled_the_keys_warn_once_and_change_no_verdict(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same verdicts as without the keys (the gang has no Pending member), and one
    warning line on stderr that names what was read but not judged. The diagnosis gains
    each Pending pod's `group` (null here) and the `groups` list (empty), nothing else."""
    (plain_out, plain_err), (jobs_out, jobs_err) = run_both(command, tmp_path, capsys)
    if command == "diagnose":
        data = json.loads(jobs_out)
        assert data.pop("groups") == []
        assert {pod.pop("group") for pod in data["pods"]} == {None}
        assert data == json.loads(plain_out)
    else:
        assert jobs_out == plain_out
    assert plain_err == []
    assert jobs_err == WARNED


def test_the_plan_leaves_the_gang_member_it_would_evict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's plan evicts ml/train-a; in a gang (min_member 2, under cce's Volcano
    session) no plan evicts it (docs/design.md §10.4)."""
    (plain_out, _), (jobs_out, jobs_err) = run_both("plan", tmp_path, capsys)
    evicted = [
        {name for p in json.loads(out)["plans"] for name in p["evict"]}
        for out in (plain_out, jobs_out)
    ]
    assert "ml/train-a" in evicted[0]
    assert "ml/train-a" not in evicted[1]
    assert jobs_err == WARNED
