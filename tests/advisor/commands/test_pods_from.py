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


DEMO = EXAMPLES / "demo.yaml"


def test_the_files_bound_mig_pods_come_holding_its_instances() -> None:
    """The exporters serve no series for a MIG pod (it holds instances, no vGPU), so the
    file brings the bound ones, as the Kubernetes API would; the demo's Pending 3g.40gb then
    waits for a re-partition (mig-geometry), as the file alone judges it."""
    described = load_scenario(DEMO)
    seen = as_exporters_see_it(described)
    seen = dataclasses.replace(seen, pods=tuple(p for p in seen.pods if not p.request.mig_profile))
    merged = with_pods_from(seen, DEMO, auto=True)
    (held,) = [p for p in merged.running if p.request.mig_profile]
    assert (held.name, held.mig_instances) == ("speech/whisper-0", ((0, 0),))
    causes = {d.pod.name: d.cause for d in judge(merged).pods}
    assert causes["speech/whisper-1"] == "mig-geometry"
    assert causes == {d.pod.name: d.cause for d in judge(described).pods}


def test_a_bound_mig_pod_whose_instance_the_cards_lack_is_left_out() -> None:
    described = load_scenario(DEMO)
    seen = as_exporters_see_it(described)
    nodes = tuple(
        dataclasses.replace(n, cards=tuple(dataclasses.replace(c, mig=()) for c in n.cards))
        if n.name == "mig-node-1"
        else n
        for n in seen.nodes
    )
    seen = dataclasses.replace(
        seen, nodes=nodes, pods=tuple(p for p in seen.pods if not p.request.mig_profile)
    )
    merged = with_pods_from(seen, DEMO, auto=True)
    assert not [p for p in merged.running if p.request.mig_profile]


def test_the_files_mixed_strategy_stands_in_for_the_node_label() -> None:
    """Only the missing-label warning of a node the file says is mixed goes (the live read
    models it as mixed too); any other warning stays."""
    from advisor.commands.pods_from import without_kubernetes_warning
    from advisor.sources.gather import Gathered

    warnings = (
        "no Kubernetes source: Pending pods are unknown",
        "node mig-node-1: MIG cards and no nvidia.com/mig.strategy label; modelled as mixed",
        "node other-1: MIG cards and no nvidia.com/mig.strategy label; modelled as mixed",
        "node mig-node-1: MIG cards and nvidia.com/mig.strategy='both'; modelled as mixed",
    )
    gathered = Gathered(load_scenario(DEMO), warnings, (), "exporters")
    assert without_kubernetes_warning(gathered, DEMO).warnings == warnings[2:]
