"""Scenario files written (docs/design.md §4): a cluster in the form `advisor.scenario` reads
back, written atomically so a reader never sees half a file.

Whatever is written here the loader accepts (`replay --write-scenario` and `snapshot` rely
on it; tests/fuzz checks the round trip).
"""

from __future__ import annotations

import glob
import json
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from advisor.core.model import Cluster
from advisor.core.profiles import profile_for
from advisor.scenario.autoscalers import autoscalers_data
from advisor.scenario.fit import node_fit_data, other_pod_data, pod_fit_data
from advisor.scenario.jobs import jobs_data, pod_jobs_data
from advisor.scenario.profile import scheduler_data
from advisor.scenario.strict import UNREAD_MIB

__all__ = ["save_scenario", "scenario_to_data", "write_atomic"]

# A temporary file's suffix: a run killed between writing and renaming leaves one behind,
# which the next write of the same target removes once it is older than STALE_PARTIAL_S (a
# younger one may belong to a writer still at work).
PARTIAL_SUFFIX = ".xgpu-partial"
STALE_PARTIAL_S = 3600.0
WRITE_SLICE = 1 << 20  # characters written (and so encoded) at a time

# libyaml when present: a 1 MB scenario is written in a fraction of the pure-Python time.
_YamlDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def scenario_to_data(cluster: Cluster) -> dict[str, Any]:
    """The §4 form of a cluster, pods in the order the cluster lists them."""
    nodes = []
    for n in cluster.nodes:
        cards = []
        for c in n.cards:
            card: dict[str, Any] = {"index": c.index, "memory_mib": c.memory_mib}
            if c.model:
                card["model"] = c.model
            if not c.healthy:
                card["healthy"] = False
            if c.uuid:
                card["uuid"] = c.uuid
            if c.numa is not None:
                card["numa"] = c.numa
            if c.max_vgpus is not None:
                card["max_vgpus"] = c.max_vgpus
            if c.mig is not None:
                instances = [{"profile": i.profile, "start": i.start} for i in c.mig]
                card["mig"] = {"instances": instances}
            cards.append(card)
        node: dict[str, Any] = {"name": n.name, **node_fit_data(n), "cards": cards}
        if n.mig_strategy != "none":
            node["mig_strategy"] = n.mig_strategy
        if n.other_pods is not None:
            node["other_pods"] = [other_pod_data(o) for o in n.other_pods]
        nodes.append(node)
    pods = []
    for p in cluster.pods:
        pod: dict[str, Any] = {"name": p.name}
        if p.placement is not None and p.request.mig_profile:
            pod["node"] = p.placement.node
            pod["mig_instances"] = [{"card": c, "start": s} for c, s in p.mig_instances]
        elif p.placement is not None:
            pod["node"], pod["cards"] = p.placement.node, list(p.placement.cards)
        if p.invalid is not None:
            pod["invalid"] = p.invalid
        if p.request.mig_profile:
            pod["request"] = {"gpus": p.request.gpus, "mig_profile": p.request.mig_profile}
        elif p.invalid is None or p.request.memory_mib > UNREAD_MIB:
            request: dict[str, Any] = {"gpus": p.request.gpus}
            if p.request.memory_mib or profile_for(cluster.scheduler.profile).requires_memory:
                request["memory_mib"] = p.request.memory_mib
            if p.request.memory_percent:
                request["memory_percent"] = p.request.memory_percent
            if p.request.core_percent:
                request["core_percent"] = p.request.core_percent
            pod["request"] = request
        if p.priority:
            pod["priority"] = p.priority
        if p.owner:
            pod["owner"] = p.owner
        for key, when in (
            ("started", p.started),
            ("created", p.created),
            ("scheduled", p.scheduled),
        ):
            if when:
                pod[key] = when
        if p.labels:
            pod["labels"] = dict(p.labels)
        if p.annotations:
            pod["annotations"] = dict(p.annotations)
        pod.update(pod_fit_data(p))
        pod.update(pod_jobs_data(p))
        pods.append(pod)
    policy = {"node": cluster.policy.node, "card": cluster.policy.card}
    block = scheduler_data(cluster.scheduler)
    return {
        **({"scheduler": block} if block else {}),
        "policy": policy,
        "max_vgpus_per_card": cluster.max_vgpus_per_card,
        **({"now": cluster.now} if cluster.now else {}),
        "nodes": nodes,
        "pods": pods,
        **jobs_data(cluster.jobs),
        **autoscalers_data(cluster.autoscalers),
    }


def write_atomic(path: Path | str, text: str) -> None:
    """Write next to the target and rename, so readers never see half a file. A target that
    exists and is no regular file (/dev/null, /dev/stdout, a pipe) is written as it stands:
    renaming over it would put a file in the device's place (as root, /dev/null's own)."""
    path = Path(path)
    try:
        special = not stat.S_ISREG(path.stat().st_mode)  # stat follows /dev/stdout's link
    except OSError:  # missing, or unreachable: mkstemp below says why in its own words
        special = False
    if special and not path.is_dir():
        with path.open("w", encoding="utf-8") as out:
            out.write(text)
        return
    _remove_stale_partials(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=PARTIAL_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            # a slice at a time: a report of a large cluster is ~100 MiB, and writing it
            # whole would encode it whole, a second copy beside the text
            for start in range(0, len(text), WRITE_SLICE):
                out.write(text[start : start + WRITE_SLICE])
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide reports from their readers
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove_stale_partials(path: Path) -> None:
    now = time.time()
    for partial in path.parent.glob(f".{glob.escape(path.name)}.*{PARTIAL_SUFFIX}"):
        try:
            if now - partial.lstat().st_mtime > STALE_PARTIAL_S and partial.is_file():
                partial.unlink()
        except OSError:
            continue  # gone already, or not ours to remove: the write goes on


def save_scenario(path: Path | str, cluster: Cluster) -> None:
    data = scenario_to_data(cluster)
    if str(path).endswith(".json"):
        text = json.dumps(data, indent=1) + "\n"
    else:
        text = yaml.dump(
            data, Dumper=_YamlDumper, sort_keys=False, default_flow_style=None, width=100
        )
    write_atomic(path, text)
