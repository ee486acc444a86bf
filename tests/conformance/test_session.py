"""Volcano v1.14.1's own session beside the advisor's job cycle (conformance/session_compare.py,
docs/conformance.md). Without Go on PATH these skip, saying why."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from advisor.core.gang import diagnose_jobs
from advisor.scenario import scenario_from_data
from conformance import harness, session_compare, session_queues
from tests.advisor.core.test_session_enqueue import SIZED

pytestmark = pytest.mark.realservices  # the Go harness runs as a process

skip_without_go = pytest.mark.skipif(
    harness.go_missing() is not None, reason=str(harness.go_missing())
)

# Two nodes of one card each; a gang of three one-card members (min_member 3) cannot be
# placed whole: Volcano's allocate discards it (actions/allocate/allocate.go, stmt.Discard).
# v1.15.1 (and the advisor) give its two cards back and the pod of no group gets one;
# v1.14.1 keeps them taken (vgpu/device_info.go Release is a no-op): the explained difference.
GANG: dict[str, Any] = {
    "scheduler": {"profile": "volcano-vgpu"},
    "policy": {"card": "legacy"},
    "nodes": [{"name": f"n{i}", "cards": [{"index": 0, "memory_mib": 16384}]} for i in (0, 1)],
    "groups": [{"name": "ml/g", "min_member": 3, "priority": 10}],
    "pods": [
        *({"name": f"ml/g-{k}", "group": "ml/g", "priority": 10,
           "request": {"gpus": 1, "memory_mib": 16384}} for k in range(3)),
        {"name": "ml/solo", "request": {"gpus": 1, "memory_mib": 16384}},
    ],
}  # fmt: skip


def test_generated_gangs_have_min_members_of_two_to_eight() -> None:
    mins = [
        g["min_member"]
        for i in range(100)
        for g in session_compare.generate_gangs(i).get("groups", [])
    ]
    assert mins
    assert min(mins) == 2
    assert max(mins) <= 8


@skip_without_go
@pytest.mark.timeout(900)  # a cold build compiles Volcano's scheduler and k8s v1.34
def test_a_gang_short_of_cards_is_discarded_and_v1_14_keeps_its_cards() -> None:
    ((pods, diffs, leaked, _, worded),) = session_compare.check([GANG])
    assert pods == 4
    assert diffs == ["ml/solo: advisor n0, upstream pending"]
    # ml/g-2: proportion refuses it for the cluster's size (two cards, both allocated),
    # which the advisor words by the nodes (docs/design.md §10.2) and predicts as a refusal
    assert worded == {"nodes (capacity) -> queue": 1}
    assert leaked  # two members were placed, then discarded: the harness names them
    assert not session_compare.disagrees(GANG)  # so it is counted as explained
    (result,) = harness.run_scenarios("volcano", [GANG])
    assert result["leaked"] == ["ml/g-0", "ml/g-1"]
    placed = {p["pod"]: p["node"] for p in result["pods"]}
    assert [placed[f"ml/g-{k}"] for k in range(3)] == [None, None, None]
    assert [(g["name"], g["state"]) for g in result["groups"] if g["name"] == "ml/g"] == [
        ("ml/g", "rolled-back")
    ]


@skip_without_go
@pytest.mark.timeout(900)
def test_generated_gangs_agree_pod_by_pod_and_group_by_group() -> None:
    rows = session_compare.check([session_compare.generate_gangs(i) for i in range(50)])
    apart = [
        d for row in rows if not row.leaked for d in row.diffs
        if not d.startswith(session_compare.EXPLAINED)
    ]  # fmt: skip
    assert apart == []


def test_generated_clusters_have_queues_at_the_edges() -> None:
    datas = [session_compare.generate_gangs(i) for i in range(200)]
    queued = [d for d in datas if d.get("queues")]
    assert len(queued) > 100
    assert any("enqueue" not in d["scheduler"].get("actions", ["enqueue"]) for d in queued)
    assert any(g.get("min_resources") for d in queued for g in d["groups"])
    # a capability of exactly one gang's request, in some dimension
    exact = 0
    for d in queued:
        wants = [
            session_queues.total([p for p in d["pods"] if p.get("group") == g["name"]])
            for g in d["groups"]
        ]
        for q in d["queues"]:
            for name, text in q.get("capability", {}).items():
                value = int(text.removesuffix("m"))
                exact += any(w.get(name) == value for w in wants)
    assert exact > 10


@skip_without_go
def test_enqueue_leaves_a_group_of_a_closed_queue_pending() -> None:
    """The harness records the actions that run (conf.EnabledActionMap, as scheduler.go
    runOnce does): with enqueue on, allocate leaves a group enqueue refused Pending
    (actions/allocate/allocate.go buildAllocateContext) rather than moving it Inqueue."""
    data: dict[str, Any] = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [{"name": "n0", "cards": [{"index": 0, "memory_mib": 16384}]}],
        "queues": [{"name": "shut", "state": "Closed"}],
        "groups": [{"name": "ml/g", "queue": "shut", "min_resources": {"cpu": "1"}}],
        "pods": [{"name": "ml/p", "group": "ml/g", "request": {"gpus": 1, "memory_mib": 1024}}],
    }
    (result,) = harness.run_scenarios("volcano", [data])
    assert [(g["name"], g["phase"], g["state"]) for g in result["groups"]] == [
        ("ml/g", "Pending", "not-admitted")
    ]
    assert session_compare.check([data])[0][1] == []


def _two_queues(plugin: str) -> dict[str, Any]:
    """Queues `a` (deserved 1 cpu) and `b` (deserved 8) on 8 cpu: `a` holds 3 and asks 2
    more, `b` holds 1 and asks 4 more. Proportion shares the cluster 4 and 4 (spec.deserved
    unread) and refuses both; capacity orders `b` first (share 1/8 against 3/1) and bounds
    it by its realCapability (all 8): `b`'s pod takes the 4 free cpu, `a`'s finds none."""

    def pod(name: str, cpu: str, card: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": f"ml/{name}",
            "group": f"ml/{name.rsplit('-', 1)[0]}",
            "request": {"gpus": 1, "memory_mib": 1024},
            "resources": {"cpu": cpu, "memory": "1Gi"},
        }
        if card is not None:
            out["node"], out["cards"] = "n0", [card]
        return out

    return {
        "scheduler": {"profile": "volcano-vgpu", "queue_plugin": plugin},
        "policy": {"card": "legacy"},
        "nodes": [{
            "name": "n0", "allocatable": {"cpu": "8", "memory": "64Gi", "pods": 20},
            "cards": [{"index": i, "memory_mib": 16384} for i in range(4)],
        }],
        "queues": [
            {"name": "a", "deserved": {"cpu": "1"}}, {"name": "b", "deserved": {"cpu": "8"}},
        ],
        "groups": [
            {"name": f"ml/{g}", "queue": g[0]} for g in ("a-run", "a-new", "b-run", "b-new")
        ],
        "pods": [
            pod("a-run-0", "3", 0), pod("a-new-0", "2"), pod("b-run-0", "1", 1),
            pod("b-new-0", "4"),
        ],
    }  # fmt: skip


@skip_without_go
@pytest.mark.timeout(900)
def test_the_capacity_plugin_in_proportions_place_bounds_a_queue_by_its_capability() -> None:
    """The harness runs `capacity` where the scenario names it, with the queues' deserved
    (without them `a`, first by name, would take the free cpu): `b`'s pod, refused by
    proportion's 4-cpu share, is placed under capacity, and the advisor agrees with Volcano
    either way."""
    for plugin, placed in (("proportion", None), ("capacity", "n0")):
        data = _two_queues(plugin)
        (result,) = harness.run_scenarios("volcano", [data])
        nodes = {p["pod"]: p["node"] for p in result["pods"]}
        assert (nodes["ml/b-new-0"], nodes["ml/a-new-0"]) == (placed, None), plugin
        assert session_compare.check([data])[0][1] == [], plugin


def test_some_generated_clusters_run_capacity_with_deserved_queues() -> None:
    datas = [session_compare.generate_gangs(i) for i in range(200)]
    capacity = [d for d in datas if d["scheduler"].get("queue_plugin") == "capacity"]
    assert len(capacity) > 20
    assert any(q.get("deserved") for d in capacity for q in d["queues"])


def test_generated_clusters_have_task_roles() -> None:
    """Some groups carry roles (`volcano.sh/task-spec` on their pods), most of those a
    `min_task_member`, both where Volcano checks each role (min_member not below the sum)
    and where it does not."""
    datas = [session_compare.generate_gangs(i) for i in range(200)]
    roled = [g for d in datas for g in d.get("groups", []) if "min_task_member" in g]
    assert any(g["min_member"] >= sum(g["min_task_member"].values()) for g in roled)
    assert any(g["min_member"] < sum(g["min_task_member"].values()) for g in roled)
    assert sum(1 for d in datas for p in d["pods"] if "role" in p) > 100


@skip_without_go
def test_a_role_short_of_its_minimum_binds_nothing_upstream_and_in_the_advisor() -> None:
    """Volcano v1.15.1 allocate_test.go TestAllocate "master's min member can not be
    allocated, break from allocating", through v1.14.1's own session: minMember 2 with
    {master: 2, worker: 0}; the second master finds its node full, so nothing binds,
    though a master and a worker would make minMember 2 (the advisor agrees: core.roles)."""

    def member(name: str, role: str) -> dict[str, Any]:
        return {
            "name": f"c1/{name}", "group": "c1/pg1", "role": role,
            "request": {"gpus": 1, "memory_mib": 1024},
            "resources": {"cpu": "1", "memory": "1Gi"}, "node_selector": {"nodeRole": role},
        }  # fmt: skip

    def node(name: str, cpu: str, role: str) -> dict[str, Any]:
        return {
            "name": name, "labels": {"nodeRole": role},
            "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": 10},
            "cards": [{"index": 0, "memory_mib": 16384}],
        }  # fmt: skip

    data: dict[str, Any] = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [node("n1", "1", "master"), node("n2", "2", "worker")],
        "groups": [{"name": "c1/pg1", "min_member": 2, "min_task_member": {"master": 2}}],
        "pods": [member(f"p{i}", "master" if i < 2 else "worker") for i in range(4)],
    }
    (result,) = harness.run_scenarios("volcano", [data])
    assert [p["node"] for p in result["pods"]] == [None] * 4
    assert session_compare.check([data])[0][1] == []


@skip_without_go
def test_a_jobs_tasks_go_by_their_index_upstream_and_in_the_advisor() -> None:
    """Volcano's TaskOrderFn ends in CompareTask (controllers/job/helpers/helpers.go): a
    Volcano Job's `<job>-<task>-<index>` pods by index, whatever their creation order, so
    `train-w-2` takes the one card before `train-w-10` (core.task_order)."""

    def member(name: str) -> dict[str, Any]:
        return {"name": name, "group": "c1/pg1", "request": {"gpus": 1, "memory_mib": 10000}}

    data: dict[str, Any] = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384}]}],
        "groups": [{"name": "c1/pg1"}],
        "pods": [member("c1/train-w-10"), member("c1/train-w-2")],
    }
    (result,) = harness.run_scenarios("volcano", [data])
    assert [(p["pod"], p["node"]) for p in result["pods"]] == [
        ("c1/train-w-10", None),
        ("c1/train-w-2", "n1"),
    ]
    # train-w-10 differs only in the words of its cause: the queue's refusal for the
    # cluster's size, worded by the nodes (docs/conformance.md), the record predicted
    ((_, diffs, _, _, worded),) = session_compare.check([data])
    assert diffs == []
    assert sum(worded.values()) == 1


# The cause classes (session_compare.upstream_class, advisor_class; docs/conformance.md).


def _up(node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"pod": "ml/p", "node": node, "job": "ml/g", "fit_error": None, **fields}


def test_upstreams_class_reads_bound_fit_error_queue_then_gang() -> None:
    """allocate.go allocateResourcesForTasks records a fit error only for a task it tried
    on the nodes; one `ssn.Allocatable` refused has none, nor has one of a job enqueue
    left Pending, nor one its job held (invalid, discarded, stopped before it)."""
    admitted = {"ml/g": "admitted"}
    assert session_compare.upstream_class(_up("n0"), admitted) == "placed"
    assert session_compare.upstream_class(_up(fit_error="0/1 nodes"), admitted) == "nodes"
    assert session_compare.upstream_class(_up(queue_refused=True), admitted) == "queue"
    assert session_compare.upstream_class(_up(), {"ml/g": "not-admitted"}) == "queue"
    assert session_compare.upstream_class(_up(tried=True), admitted) == "gang"
    assert session_compare.upstream_class(_up(job=""), admitted) == "missing"


def test_the_advisors_node_level_causes_are_one_class() -> None:
    jobs = diagnose_jobs(scenario_from_data(GANG, "<test>", "volcano-vgpu"))
    own = {v.pod.name: session_compare.own_class(v) for v in jobs.diagnosis.pods}
    causes = {v.pod.name: v.cause for v in jobs.diagnosis.pods}
    assert own == {"ml/g-0": "gang", "ml/g-1": "gang", "ml/g-2": "nodes", "ml/solo": "placed"}
    assert causes["ml/g-2"] == "capacity"
    # the record predicted: ml/g-2's queue refuses it for the cluster's size (`sized`)
    record = {v.pod.name: session_compare.advisor_class(v, jobs) for v in jobs.diagnosis.pods}
    assert record == {**own, "ml/g-2": "queue"}
    assert jobs.reached == {"ml/g-0", "ml/g-1", "ml/g-2", "ml/solo"}


def test_a_member_never_reached_keeps_its_own_cause_and_the_jobs_record() -> None:
    """A gang of three whose first member fails on the nodes (min_member equals the
    members: NeedContinueAllocating stops the turn): the next two are never reached.
    The one of them no node could ever hold keeps its own cause (docs/design.md §10.3);
    Volcano writes the job's FitError on both, which the advisor predicts."""
    data: dict[str, Any] = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [{"name": "n0", "cards": [{"index": i, "memory_mib": 16384} for i in (0, 1)]}],
        "groups": [{"name": "ml/g", "min_member": 3}],
        "pods": [
            {
                "name": "ml/run",
                "node": "n0",
                "request": {"gpus": 1, "memory_mib": 16384},
                "cards": [0],
            },
            {"name": "ml/g-0", "group": "ml/g", "request": {"gpus": 2, "memory_mib": 1024}},
            {"name": "ml/g-1", "group": "ml/g", "request": {"gpus": 1, "memory_mib": 1024}},
            {"name": "ml/g-2", "group": "ml/g", "request": {"gpus": 1, "memory_mib": 32768}},
        ],
    }
    jobs = diagnose_jobs(scenario_from_data(data, "<test>", "volcano-vgpu"))
    verdicts = {v.pod.name: v for v in jobs.diagnosis.pods}
    assert jobs.reached == {"ml/g-0"}
    assert [verdicts[f"ml/g-{k}"].cause for k in range(3)] == [
        "fragmentation",
        "gang",
        "unsatisfiable",
    ]
    record = [session_compare.advisor_class(verdicts[f"ml/g-{k}"], jobs) for k in range(3)]
    assert record == ["nodes", "gang", "gang"]


def _named(*names: str) -> dict[str, Any]:
    """GANG's gang with its members renamed, in this order (the scenario's: creation)."""
    data = {**GANG, "pods": [dict(p) for p in GANG["pods"]]}
    for member, name in zip(data["pods"], names, strict=False):
        member["name"] = name
    return data


@skip_without_go
@pytest.mark.timeout(900)
def test_a_member_the_queue_refuses_for_the_clusters_size_leaves_the_next_tried() -> None:
    """SIZED (tests/advisor/core/test_session_enqueue.py): Volcano's proportion refuses
    ml/a (allocate.go `continue`, no fit error) and tries ml/b on the nodes; the advisor
    words ml/a by the nodes, predicting the refusal, and ml/b as Volcano does."""
    (result,) = harness.run_scenarios("volcano", [SIZED])
    seen = {
        p["pod"]: (p["tried"], p["queue_refused"], p["fit_error"] is not None)
        for p in result["pods"]
    }
    assert seen == {"ml/a": (True, True, False), "ml/b": (True, False, True)}
    ((_, diffs, leaked, classes, worded),) = session_compare.check([SIZED])
    assert diffs == []
    assert worded == {"nodes (unsatisfiable) -> queue": 1}
    assert not leaked
    assert classes == {"queue": 1, "nodes": 1}


@skip_without_go
@pytest.mark.timeout(900)
def test_members_volcano_tries_by_name_index_agree() -> None:
    """Three members of four cpu, every one needed, on a node of 6 (n1's cpu, tainted,
    keeps the queue from refusing them): the first tried fits, the second fails on the
    nodes (node-resources, which ends the turn), the third is never tried (gang). Volcano
    tries them by the index their names end in (CompareTask), whatever their creation
    order, and so does the advisor (core.task_order): named in either order, they agree."""

    def members(*names: str) -> dict[str, Any]:
        return {
            "scheduler": {"profile": "volcano-vgpu"},
            "policy": {"card": "legacy"},
            "nodes": [{
                "name": "n0", "allocatable": {"cpu": "6", "memory": "64Gi", "pods": 10},
                "cards": [{"index": i, "memory_mib": 16384} for i in range(3)],
            }, {
                "name": "n1", "allocatable": {"cpu": "8", "memory": "64Gi", "pods": 10},
                "cards": [{"index": 0, "memory_mib": 16384}],
                "taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
            }],
            "groups": [{"name": "ml/g", "min_member": 3}],
            "pods": [
                {"name": name, "group": "ml/g", "request": {"gpus": 1, "memory_mib": 1024},
                 "resources": {"cpu": "4", "memory": "1Gi"}}
                for name in names
            ],
        }  # fmt: skip

    late = members("ml/w-x-10", "ml/w-x-2", "ml/w-x-3")
    ((_, diffs, _, classes, _),) = session_compare.check([late])
    assert diffs == []
    # Volcano and the advisor: 2 fits and is discarded (gang), 3 fails, 10 is never tried
    assert classes == {"gang": 2, "nodes": 1}
    reached = diagnose_jobs(scenario_from_data(late, "<test>")).reached
    assert reached == {"ml/w-x-2", "ml/w-x-3"}  # ml/w-x-3 after ml/w-x-2 fitted
    ((_, diffs, _, _, _),) = session_compare.check([members("ml/w-x-2", "ml/w-x-3", "ml/w-x-10")])
    assert diffs == []


@skip_without_go
@pytest.mark.timeout(900)
def test_generated_gangs_agree_on_the_cause_class() -> None:
    """On a fixed batch (seeds 50-79): for every pod both sides leave Pending, what Volcano
    records (its own fit error, its queue's, its job's) and whether allocate reached it
    are what the advisor predicts; every class occurs, and the advisor's own cause words
    some otherwise (docs/design.md §10.2, §10.3)."""
    rows = session_compare.check([session_compare.generate_gangs(i) for i in range(50, 80)])
    lines = [d for row in rows if not row.leaked for d in row.diffs]
    record = (session_compare.CAUSE, session_compare.REACHED)
    assert [d for d in lines if d.startswith(record)] == []
    counted: Counter[str] = Counter()
    worded: Counter[str] = Counter()
    for row in rows:
        counted.update(row.classes)
        worded.update(row.worded)
    assert all(counted[c] > 0 for c in ("nodes", "gang", "queue"))
    assert {text.rsplit(" -> ", 1)[1] for text in worded} == {"gang", "queue"}


@skip_without_go
def test_a_pod_of_no_group_enqueue_leaves_pending_for_the_size_is_explained() -> None:
    """Seed 2 (seed 626 before the clusters drew MIG): ml/mig-0, a pod of no group (its own
    PodGroup in Volcano), is left Pending by enqueue (upstream `queue`, never reached); the
    advisor tries it and words it by the nodes, as it does a group enqueue refuses for the
    cluster's size alone (JobsDiagnosis.left_to_nodes names such a pod by its name), and
    predicts both."""
    (row,) = session_compare.check([session_compare.generate_gangs(2)])
    record = (session_compare.CAUSE, session_compare.REACHED)
    assert [d for d in row.diffs if d.startswith(record)] == []
    jobs = diagnose_jobs(scenario_from_data(session_compare.generate_gangs(2), "<t>"))
    (verdict,) = (v for v in jobs.diagnosis.pods if v.pod.name == "ml/mig-0")
    assert "ml/mig-0" not in jobs.reached
    assert "ml/mig-0" in jobs.left_to_nodes
    assert session_compare.advisor_class(verdict, jobs) == "queue"
    assert session_compare.own_class(verdict) == "nodes"


def test_generated_gangs_have_mig_on_some_clusters() -> None:
    """Three clusters in ten carry MIG (generate_mig.py): mixed nodes, running MIG pods on
    their instances, Pending MIG pods in gangs and alone."""
    datas = [session_compare.generate_gangs(i) for i in range(100)]
    mig = [d for d in datas if any("mig" in c for n in d["nodes"] for c in n["cards"])]
    assert 15 < len(mig) < 50
    pending = [p for d in mig for p in d["pods"] if "node" not in p]
    asks = [p for p in pending if "mig_profile" in p["request"]]
    assert any("group" in p for p in asks)
    assert any("group" not in p for p in asks)
    assert any("mig_instances" in p for d in mig for p in d["pods"])


def test_a_pod_in_a_queue_allocate_passes_over_is_recorded_as_its_jobs() -> None:
    """Seed 570: `default` is overused, so allocate passes over it without asking its
    Allocatable (allocate.go: `ssn.Overused(queue)`, continue): its pod of no group gets
    its job's FitError, class `gang`, though the advisor explains it by its queue (cause
    `queue`)."""
    data = session_compare.generate_gangs(570)
    jobs = diagnose_jobs(scenario_from_data(data, "<t>"))
    (verdict,) = (v for v in jobs.diagnosis.pods if v.pod.name == "ml/mig-2")
    assert verdict.cause == "queue"
    assert verdict.message.startswith("Queue default is overused, ignore it")
    assert "ml/mig-2" not in jobs.reached
    assert "ml/mig-2" not in jobs.not_admitted
    assert session_compare.advisor_class(verdict, jobs) == "gang"
    assert session_compare.own_class(verdict) == "queue"


def test_a_queue_a_rounding_short_of_what_the_cluster_leaves_refuses_the_task() -> None:
    """Seed 1321: proportion's deserved for q0 converges on the four 1g.10gb instances the
    cluster leaves it and stops at 3.99997; its second two-instance member finds
    allocated + request above it and Volcano's queueAllocatable refuses it (the gang is
    rolled back). The shortage is not the cluster's size, since the nodes take the pod:
    the advisor keeps the queue's refusal (its words, cause `queue`) rather than place it."""
    data = session_compare.generate_gangs(1321)
    jobs = diagnose_jobs(scenario_from_data(data, "<t>"))
    found = {v.pod.name: v for v in jobs.diagnosis.pods}
    refused = found["ml/gang-2-worker-6"]
    assert (refused.cause, refused.placement) == ("queue", None)
    assert refused.message == (
        "Queue q0 is overused when considering this task: insufficient "
        "nvidia.com/mig-1g.10gb (nvidia.com/mig-1g.10gb: 2 allocated + 2 > 3.99997 deserved)"
    )
    assert found["ml/gang-2-worker-5"].placement is None  # rolled back with its gang
    assert "ml/gang-2-worker-6" not in jobs.sized
    assert [(g.name, g.state) for g in jobs.groups if g.name == "ml/gang-2"] == [
        ("ml/gang-2", "rolled-back")
    ]


@skip_without_go
@pytest.mark.timeout(900)
def test_generated_mig_clusters_agree_with_volcanos_session() -> None:
    """Seeds 570 and 1321 (above), and the MIG clusters of seeds 0-59: placed or not, node,
    gang states and what Volcano records, as the session harness runs them with the
    device plugin's nvidia.com/mig-<P> per instance."""
    seeds = [570, 1321] + [
        i for i in range(60) if any("mig" in c for n in session_compare.generate_gangs(i)["nodes"]
                                    for c in n["cards"])
    ]  # fmt: skip
    assert len(seeds) > 10
    rows = session_compare.check([session_compare.generate_gangs(i) for i in seeds])
    apart = [
        d for row in rows if not row.leaked for d in row.diffs
        if not d.startswith(session_compare.EXPLAINED)
    ]  # fmt: skip
    assert apart == []
