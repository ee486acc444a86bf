"""The job layer read live (docs/design.md §10.1): Volcano's PodGroups and Queues, the
ResourceQuotas and `volcano-scheduler-configmap` from the API double (CRD group/version paths,
list kinds, 404 without the CRDs, as kube-apiserver answers), through the real
kubernetes_asyncio client, assemble, `snapshot` and `report --kubernetes`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.jobs import Gang, Group, Jobs, Queue, Quota
from advisor.core.model import Scheduler
from advisor.scenario import load_scenario, scenario_from_data, scenario_to_data
from advisor.sources.assemble import assemble
from advisor.sources.kubejobs import JobLists, kube_jobs, pod_job, podgroup, scheduler_conf
from advisor.sources.kubernetes import read_kubernetes
from advisor.sources.values import Sample
from tests.advisor.sources.builders import card, cce_pod, node_info, vgpu
from tests.advisor.sources.pages_server import serving_exporters
from tests.kubeapi import objects
from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.store import KubeStore
from tests.kubeapi.threaded import KubeApiThread

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]

GROUP_KEY = "scheduling.k8s.io/group-name"
CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
    arguments:
      overcommit-factor: 1.5
  - name: proportion
"""


def populate(api: KubeStore, *, conf: str | None = CONF) -> None:
    """A CCE cluster: one node with two cards, one worker of ml/job running on card 0, two
    Pending (one not preemptable, one never preempting), a queue, a quota, the configmap."""
    api.add_node(objects.node("n1", allocatable={"volcano.sh/gpu-mem.128Mi": 256}))
    job = {GROUP_KEY: "job"}
    api.add_pod(cce_pod("ml/job-0", node="n1", cards=(0,), annotations=job))
    api.add_pod(
        cce_pod("ml/job-1", annotations={**job, "volcano.sh/preemptable": "false"}, priority=100)
    )
    never = cce_pod("ml/job-2", annotations=job)
    never["spec"]["preemptionPolicy"] = "Never"
    never["spec"]["priorityClassName"] = "high"
    never["spec"]["priority"] = 100
    api.add_pod(never)
    api.create(
        "podgroups",
        objects.podgroup(
            "job",
            namespace="ml",
            min_member=3,
            queue="training",
            priority_class="high",
            min_resources={"volcano.sh/gpu-mem.128Mi": "96"},
            phase="Inqueue",  # admitted, one of its three running
        ),
    )
    api.create(
        "queues",
        objects.queue(
            "training",
            weight=3,
            capability={"cpu": "64"},
            guarantee={"cpu": "8"},
            deserved={"cpu": "32"},
        ),
    )
    api.create("queues", objects.queue("default", state="Closed", reclaimable=False))
    api.create(
        "resourcequotas",
        objects.resource_quota("gpu", namespace="ml", hard={"limits.nvidia.com/gpumem": "40000"}),
    )
    if conf is not None:
        api.create("configmaps", objects.scheduler_configmap(conf))
        # another namespace's ConfigMap of the same name is not Volcano's
        api.create("configmaps", objects.scheduler_configmap("actions: reclaim", namespace="x"))


def samples() -> list[Sample]:
    return [
        node_info("n1"),
        *card("n1", 0, mode=0),
        *card("n1", 1),
        *vgpu("n1", "ml/job-0", 0, 4096),
    ]


EXPECTED = Jobs(
    queues=(
        Queue("default", 1, {}, {}, False, 0, "Closed"),
        Queue("training", 3, {"cpu": "64"}, {"cpu": "8"}, True, 0, "Open", {"cpu": "32"}),
    ),
    groups=(Group("ml/job", 3, "training", 100, {"volcano.sh/gpu-mem.128Mi": "96"}, "Inqueue"),),
    quotas=(Quota("ml", {"limits.nvidia.com/gpumem": "40000"}),),
)


async def test_the_job_layer_is_read_and_kept_by_the_snapshot(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert state.warnings == ()
    assert state.jobs.volcano
    result = assemble(samples(), state)
    assert result.warnings == ()
    cluster = result.cluster
    assert cluster.jobs == EXPECTED
    # The configmap's actions in their order, the gang option it gives, its overcommit factor.
    assert cluster.scheduler == Scheduler(
        "cce",
        actions=("enqueue", "allocate", "preempt", "backfill"),
        gang=Gang(preemptable=False),
        overcommit_factor=1.5,
    )
    pods = {p.name: (p.group, p.preemptable, p.preemption_policy) for p in cluster.pods}
    assert pods == {
        "ml/job-0": ("ml/job", True, "PreemptLowerPriority"),
        "ml/job-1": ("ml/job", False, "PreemptLowerPriority"),
        "ml/job-2": ("ml/job", True, "Never"),
    }
    assert scenario_from_data(scenario_to_data(cluster), "snapshot.yaml") == cluster
    paths = {r.path for r in kube_api.requests}
    assert {
        "/apis/scheduling.volcano.sh/v1beta1/podgroups",
        "/apis/scheduling.volcano.sh/v1beta1/queues",
        "/api/v1/resourcequotas",
        "/api/v1/namespaces/volcano-system/configmaps",
    } <= paths
    configmaps = [r for r in kube_api.requests if r.path.endswith("/configmaps")]
    assert [r.query.get("fieldSelector") for r in configmaps] == [
        "metadata.name=volcano-scheduler-configmap"
    ]


async def test_without_volcano_there_are_no_groups_and_no_warning(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    """No CRD: kube-apiserver answers 404 for its paths; the cluster simply has no Volcano,
    so the pods' group annotations name nothing and no configmap is asked for."""
    populate(kube_api)
    kube_api.volcano = False
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert state.warnings == ()
    result = assemble(samples(), state)
    assert result.warnings == ()
    assert result.cluster.jobs == Jobs(quotas=EXPECTED.quotas)
    assert result.cluster.scheduler == Scheduler("cce")
    assert {p.group for p in result.cluster.pods} == {None}
    assert not any(r.path.endswith("/configmaps") for r in kube_api.requests)


async def test_a_failing_list_is_a_warning_and_the_run_goes_on(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate(kube_api)
    kube_api.fail_next(status_code=403, resource="queues")
    kube_api.fail_next(status_code=403, resource="resourcequotas")
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert [w.split(": list ")[-1] for w in state.warnings] == [
        "queues: HTTP 403 Forbidden injected fault; Volcano's queues are left out",
        "resourcequotas: HTTP 403 Forbidden injected fault; resourcequotas are left out",
        "Kubernetes: PodGroups name queues not listed: training; taken with Volcano's "
        "defaults (weight 1, no capability, Open)",
    ]
    # the group's queue is kept with Volcano's defaults, so its snapshot reads back
    cluster = assemble(samples(), state).cluster
    assert cluster.jobs == Jobs((Queue("training"),), EXPECTED.groups, ())
    assert scenario_from_data(scenario_to_data(cluster), "s.yaml") == cluster


async def test_a_pod_naming_a_missing_podgroup_keeps_no_group(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate(kube_api)
    kube_api.add_pod(cce_pod("ml/orphan", annotations={GROUP_KEY: "gone"}))
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    result = assemble(samples(), state)
    assert result.warnings == (
        "pods name PodGroups that do not exist (Volcano waits for them): ml/gone",
    )
    assert {p.name: p.group for p in result.cluster.pods}["ml/orphan"] is None
    assert scenario_from_data(scenario_to_data(result.cluster), "s.yaml") == result.cluster


@pytest.mark.parametrize(
    ("text", "settings", "warning"),
    [
        ("actions: 'allocate,backfill'", {"actions": ("allocate", "backfill")}, None),
        # UnmarshalSchedulerConf refuses the whole configuration for an unknown action
        ("actions: 'allocate, elect'", {}, "unknown action 'elect'; actions left out"),
        (
            "tiers: [{plugins: [{name: gang, enableJobStarving: false}]}]",
            {"gang": Gang(job_starving=False)},
            None,
        ),
        # overcommit.go replaces a factor below 1 with its default
        (
            "tiers: [{plugins: [{name: overcommit, arguments: {overcommit-factor: 0.5}}]}]",
            {},
            None,
        ),
        ("[not, a, mapping]", {}, "no readable volcano-scheduler.conf; Volcano's defaults used"),
        # capacity in proportion's place decides the queues (docs/design.md §10.2)
        (
            "tiers: [{plugins: [{name: overcommit}, {name: capacity}]}]",
            {"queue_plugin": "capacity"},
            None,
        ),
        # enableHierarchy is a plugin option (conf.PluginOption EnabledHierarchy)
        (
            "tiers: [{plugins: [{name: capacity, enableHierarchy: true}]}]",
            {"queue_plugin": "capacity", "enable_hierarchy": True},
            None,
        ),
        (
            "tiers: [{plugins: [{name: capacity, enableHierarchy: false}]}]",
            {"queue_plugin": "capacity"},
            None,
        ),
        (
            "tiers: [{plugins: [{name: capacity, enableHierarchy: true,"
            " arguments: {ancestorReclaimLevel: 1}}]}]",
            {"queue_plugin": "capacity", "enable_hierarchy": True, "ancestor_reclaim_level": 1},
            None,
        ),
        (  # parseArguments: a negative level is 0
            "tiers: [{plugins: [{name: capacity, enableHierarchy: true,"
            " arguments: {ancestorReclaimLevel: -2}}]}]",
            {"queue_plugin": "capacity", "enable_hierarchy": True},
            None,
        ),
        (
            "tiers: [{plugins: [{name: proportion}]}, {plugins: [{name: capacity}]}]",
            {},
            "the tiers name both proportion and capacity; queues are judged by proportion alone",
        ),
        # action arguments (framework.GetArgOfActionFromConf, Arguments.GetBool) the model
        # does not follow are named; their defaults, or a value GetBool cannot read, are not
        (
            "configurations: [{name: preempt, arguments: {enableTopologyAwarePreemption: true}}]",
            {},
            "preempt enableTopologyAwarePreemption: true: topology-aware preemption "
            "(preempt.go topologyAwarePreempt) is not modelled; preemption verdicts follow "
            "the default victim search",
        ),
        (
            "configurations: [{name: allocate, arguments: {predicateErrorCacheEnable: 'F'}}]",
            {},
            "allocate predicateErrorCacheEnable: false: allocate's predicate error cache is "
            "off, but the model keeps it on: a node that failed a task of a role stays failed "
            "for the role's later tasks in that turn",
        ),
        (
            "configurations: [{name: allocate, arguments: {predicateErrorCacheEnable: true}}]",
            {},
            None,
        ),
        (
            "configurations: [{name: preempt, arguments: {enableTopologyAwarePreemption: 'no'}}]",
            {},
            None,
        ),
    ],
)
def test_the_configuration_is_read_as_volcano_reads_it(
    text: str, settings: dict[str, object], warning: str | None
) -> None:
    warnings: list[str] = []
    assert scheduler_conf([objects.scheduler_configmap(text)], warnings) == settings
    expected = (
        [f"Kubernetes: configmap volcano-system/volcano-scheduler-configmap: {warning}"]
        if warning
        else []
    )
    assert warnings == expected


@pytest.mark.parametrize(
    ("annotations", "labels", "preemptable"),
    [
        ({}, {}, True),  # absent: true
        ({"volcano.sh/preemptable": "false"}, {}, False),
        ({"volcano.sh/preemptable": "T"}, {"volcano.sh/preemptable": "false"}, True),
        ({}, {"volcano.sh/preemptable": "0"}, False),  # no annotation: the label
        ({"volcano.sh/preemptable": "yes"}, {}, False),  # ParseBool refuses: false
    ],
)
def test_preemptable_follows_get_pod_preemptable(
    annotations: dict[str, str], labels: dict[str, str], preemptable: bool
) -> None:
    """Volcano v1.15.1 pkg/scheduler/api/pod_info.go, GetPodPreemptable."""
    pod = objects.pod("p", namespace="ml", annotations=annotations, labels=labels)
    assert pod_job(pod) == (None, preemptable, "PreemptLowerPriority", None)


@pytest.mark.parametrize(
    ("annotations", "labels", "role"),
    [
        ({"volcano.sh/task-spec": "worker"}, {"volcano.sh/task-spec": "ps"}, "worker"),
        ({}, {"volcano.sh/task-spec": "ps"}, "ps"),  # no annotation: the label
        ({"volcano.sh/task-spec": ""}, {"volcano.sh/task-spec": "ps"}, "ps"),  # empty: the label
        ({}, {}, None),
    ],
)
def test_a_pods_task_role_follows_get_task_role(
    annotations: dict[str, str], labels: dict[str, str], role: str | None
) -> None:
    """Volcano v1.15.1 pkg/scheduler/api/job_info.go, getTaskRole."""
    pod = objects.pod("p", namespace="ml", annotations=annotations, labels=labels)
    assert pod_job(pod)[3] == role


@pytest.mark.parametrize(
    ("status", "phase"),
    [
        ({"phase": "Inqueue"}, "Inqueue"),
        ({"phase": "Unknown"}, "Unknown"),
        ({}, "Pending"),  # none written yet: Volcano's IsPending is true
        ({"phase": ""}, "Pending"),
        ({"phase": "Scheduling"}, None),  # not a phase of v1beta1: inferred
    ],
)
def test_a_podgroups_phase_is_its_status_phase(status: dict[str, str], phase: str | None) -> None:
    """Volcano v1.15.1 pkg/scheduler/api/job_info.go IsPending: Pending or no phase."""
    item = objects.podgroup("pg", namespace="ml")
    item["status"] = status
    group = podgroup(item, {})
    assert group is not None
    assert group.phase == phase


def test_a_podgroups_task_roles_are_its_min_task_member() -> None:
    """spec.minTaskMember (map[string]int32); an entry the API would refuse is left out."""
    item = objects.podgroup("pg", namespace="ml", min_member=3)
    item["spec"]["minTaskMember"] = {"master": 1, "worker": 2, "": 1, "bad": "x", "neg": -1}
    group = podgroup(item, {})
    assert group is not None
    assert dict(group.min_task_member) == {"master": 1, "worker": 2}


# -- `snapshot` and `report --kubernetes`, end to end --------------------------------------


@pytest.fixture
def exporters() -> Iterator[str]:
    with serving_exporters(samples(), ("n1",)) as urls:
        yield urls


# cce runs Volcano's session, which judges the gang and its queue: the quota remains.
WARNING = (
    "xgpu-advisor: warning: jobs read but not yet modelled: "
    "resource quotas in ml (verdicts leave them out)\n"
)


def test_snapshot_writes_the_keys_and_report_warns_once(
    kube_api_thread: KubeApiThread,
    exporters: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kube_api_thread.call(populate, kube_api_thread.api)
    kubeconfig = kube_api_thread.api.write_kubeconfig(tmp_path / "kubeconfig")
    live = ["--exporters", exporters, "--kubeconfig", str(kubeconfig)]
    out = tmp_path / "snapshot.yaml"
    assert main(["snapshot", *live, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(WARNING)
    assert err.count("\n") == 2, err  # the warning, then the summary
    snapshot = load_scenario(out)
    assert snapshot.jobs == EXPECTED
    assert snapshot.scheduler.actions == ("enqueue", "allocate", "preempt", "backfill")
    assert [p.group for p in snapshot.pods] == ["ml/job"] * 3
    text = out.read_text()
    assert "groups:" in text
    assert "queues:" in text
    assert "quotas:" in text
    reports = tmp_path / "reports"
    assert main(["report", *live, "--kubernetes", "--output-dir", str(reports)]) == 0
    assert capsys.readouterr().err.count(WARNING) == 1
    # the same report from the snapshot: one warning too
    assert main(["report", "--scenario", str(out), "--output-dir", str(tmp_path / "r2")]) == 0
    assert capsys.readouterr().err.startswith(WARNING + "xgpu-advisor: 2 Pending GPU pods")


def test_a_queues_parent_is_read_and_one_volcano_would_refuse_is_dropped() -> None:
    """Queue spec.parent (capacity's hierarchy): kept where it names a queue (or `root`,
    which Volcano creates); one naming no queue, or closing a cycle, is dropped with a
    warning, so the snapshot reads back (a scenario refuses both)."""
    items = [
        objects.queue("root"),
        objects.queue("ml", parent="root"),
        objects.queue("training", parent="ml"),
        objects.queue("lost", parent="gone"),
        objects.queue("a", parent="b"),
        objects.queue("b", parent="a"),
    ]
    warnings: list[str] = []
    jobs = kube_jobs(JobLists([], items, [], [], True), [], warnings).jobs
    parents = {q.name: q.parent for q in jobs.queues}
    assert parents == {
        "root": None,
        "ml": "root",
        "training": "ml",
        "lost": None,
        "a": None,
        "b": "a",
    }
    assert warnings == [
        "Kubernetes: Queue lost: parent gone is not a queue; taken as the root's child",
        "Kubernetes: Queue a: parent b closes a cycle; taken as the root's child",
    ]
    card = {"index": 0, "memory_mib": 1024}
    data: dict[str, object] = {"nodes": [{"name": "n1", "cards": [card]}]}
    data["queues"] = [
        {"name": q.name, **({"parent": q.parent} if q.parent else {})} for q in jobs.queues
    ]
    assert [q.parent for q in scenario_from_data(data, "s.yaml").jobs.queues] == [
        parents[q.name] for q in jobs.queues
    ]
