"""`--pods-from FILE` (advisor.commands.pods_from) on a Volcano cluster: the file stands in for
the Kubernetes API, so what the API would add to the exporters' view (PodGroups, Queues, each
pod's group and preemptability, the scheduler configmap's actions) comes from the file, and
the cluster is judged as the file itself is. The demo's training page reads it so."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

from advisor.commands.pods_from import with_pods_from
from advisor.core.gang import judge
from advisor.core.hpa import Autoscaler
from advisor.core.jobs import NO_JOBS
from advisor.core.model import Cluster, Scheduler
from advisor.core.nodefilters import NO_CONSTRAINTS, NO_RESOURCES, NOT_KNOWN
from advisor.scenario import load_scenario, save_scenario

EXAMPLES = Path(__file__).resolve().parents[3] / "advisor" / "examples"
TRAINING = EXAMPLES / "training.yaml"


def as_exporters_see_it(cluster: Cluster) -> Cluster:
    """What the exporters alone give: cards and allotments, no Pending pod, nothing the
    Kubernetes API knows, and the profile the allocation annotations name."""
    nodes = tuple(
        dataclasses.replace(n, allocatable=NOT_KNOWN, labels=MappingProxyType({}), other_pods=None)
        for n in cluster.nodes
    )
    running = tuple(
        dataclasses.replace(
            p,
            owner=None,
            priority=0,
            resources=NO_RESOURCES,
            constraints=NO_CONSTRAINTS,
            group=None,
            preemptable=True,
        )
        for p in cluster.running
    )
    scheduler = Scheduler(cluster.scheduler.profile)
    return dataclasses.replace(
        cluster, nodes=nodes, pods=running, jobs=NO_JOBS, scheduler=scheduler
    )


def verdicts(cluster: Cluster) -> list[tuple[str, str, object]]:
    return [(d.pod.name, d.cause, d.preemption) for d in judge(cluster).pods]


def test_the_file_brings_the_jobs_and_the_cluster_is_judged_as_the_file_is() -> None:
    described = load_scenario(TRAINING)
    merged = with_pods_from(as_exporters_see_it(described), TRAINING, auto=True)
    assert merged.jobs == described.jobs
    assert merged.scheduler == described.scheduler
    assert {p.name: (p.group, p.preemptable) for p in merged.running} == {
        p.name: (p.group, p.preemptable) for p in described.running
    }
    assert verdicts(merged) == verdicts(described)


def test_a_named_volcano_profile_takes_the_files_actions_as_the_configmaps() -> None:
    """`--scheduler volcano-vgpu` (not auto): the profile stays the one named, and the file's
    actions and plugin options apply, as the Kubernetes source applies Volcano's configmap."""
    described = load_scenario(TRAINING)
    merged = with_pods_from(as_exporters_see_it(described), TRAINING, auto=False)
    assert merged.scheduler.actions == described.scheduler.actions
    assert verdicts(merged) == verdicts(described)


def test_a_profile_without_volcanos_session_keeps_its_settings() -> None:
    hami = load_scenario(EXAMPLES / "hami.yaml")
    merged = with_pods_from(as_exporters_see_it(hami), TRAINING, auto=False)
    assert merged.scheduler == Scheduler("hami")


def test_the_file_brings_the_autoscalers_and_its_clock(
    tmp_path: Path,
) -> None:
    """HPAs come from the Kubernetes API, so from the file; and its `now`, the moment its
    Pending pods' creation times belong to (ages are counted to it, not to the run's clock)."""
    hpa = Autoscaler("ml/workers-hpa", "Deployment/ml/workers", 1, 4, 2)
    described = dataclasses.replace(
        load_scenario(TRAINING), autoscalers=(hpa,), now="2024-05-01T12:00:00Z"
    )
    path = tmp_path / "pods.yaml"
    save_scenario(path, described)
    live = dataclasses.replace(as_exporters_see_it(described), autoscalers=(), now=None)
    merged = with_pods_from(live, path, auto=True)
    assert merged.autoscalers == (hpa,)
    assert merged.now == "2024-05-01T12:00:00Z"
    unset = dataclasses.replace(described, now=None)
    save_scenario(path, unset)
    assert with_pods_from(live, path, auto=True).now is None  # the run's own clock


def test_the_files_capacity_hierarchy_applies_as_the_configmaps(tmp_path: Path) -> None:
    """The file's queue plugin and capacity's enableHierarchy (`enable_hierarchy`) are
    plugin options of Volcano's configmap: they apply with the rest."""
    base = load_scenario(TRAINING)
    scheduler = dataclasses.replace(base.scheduler, queue_plugin="capacity", enable_hierarchy=True)
    described = dataclasses.replace(base, scheduler=scheduler)
    path = tmp_path / "pods.yaml"
    save_scenario(path, described)
    merged = with_pods_from(as_exporters_see_it(base), path, auto=False)
    assert merged.scheduler.enable_hierarchy
    assert merged.scheduler.queue_plugin == "capacity"
