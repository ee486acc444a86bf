"""Scenario files (docs/design.md §4) read: strict loading into a `Cluster`. Writing them is
`advisor.scenario.write`'s; `advisor.scenario` exports both.

Every rejection names the file, the path inside it and the problem, so a user can fix
the file from the one line they see.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from advisor.core.model import (
    Card,
    Cluster,
    Node,
    OtherPod,
    Pod,
    ProfileName,
    Request,
)
from advisor.core.profiles import profile_for, profile_of
from advisor.core.profiles.base import mode_conflict
from advisor.core.state import Shape
from advisor.core.times import parse_time, rfc3339
from advisor.core.whatif import as_held
from advisor.defaults import DEFAULT_LIMITS, ScenarioLimits
from advisor.scenario.autoscalers import AUTOSCALER_KEYS, read_autoscalers
from advisor.scenario.fit import (
    NODE_FIT_KEYS,
    POD_FIT_KEYS,
    read_node_fit,
    read_pod_fit,
)
from advisor.scenario.jobs import (
    JOB_KEYS,
    POD_JOB_KEYS,
    check_pod_groups,
    read_jobs,
    read_pod_jobs,
)
from advisor.scenario.mig import (
    MIG_CARD_KEYS,
    MIG_NODE_KEYS,
    MIG_POD_KEYS,
    check_mig_pods,
    check_node,
    read_card_mig,
    read_placement,
    read_strategy,
)
from advisor.scenario.parse import parse_text
from advisor.scenario.profile import (
    default_max_vgpus,
    read_policy,
    read_scheduler,
    retarget,
)
from advisor.scenario.strict import MAX_MEMORY_MIB, UNREAD_MIB
from advisor.scenario.strict import Reader as _Reader
from advisor.scenario.strict import kind as _kind
from advisor.scenario.text import read_scenario_text


def load_scenario(
    path: Path | str,
    scheduler: ProfileName | None = None,
    limits: ScenarioLimits = DEFAULT_LIMITS,
) -> Cluster:
    """The scenario in the file; its size is bounded (`scenario.text`), its depth and numbers
    (`scenario.parse`), and so are its nodes, cards and pods (`limits`)."""
    path = Path(path)
    return scenario_from_text(read_scenario_text(path, limits.max_bytes), path, scheduler, limits)


def scenario_from_text(
    text: str,
    path: Path | str,
    scheduler: ProfileName | None = None,
    limits: ScenarioLimits = DEFAULT_LIMITS,
) -> Cluster:
    """`load_scenario` of the file's text, read already (`scenario.text.read_scenario_text`:
    a command reads its input before it loads the core)."""
    return scenario_from_data(parse_text(text, str(path)), str(path), scheduler, limits)


def scenario_from_data(
    data: object,
    source: str,
    scheduler_override: ProfileName | None = None,
    limits: ScenarioLimits = DEFAULT_LIMITS,
) -> Cluster:
    """The cluster the file describes, judged by its own profile; `scheduler_override` (the
    CLI's --scheduler) then judges it under another one: running pods keep the memory they
    hold (`as_held`), and the policy and vGPU limit follow that profile's defaults where the
    file left them to its own (`retarget`)."""
    cluster = _read_cluster(data, source, limits)
    if scheduler_override is None or scheduler_override == cluster.scheduler.profile:
        return cluster
    return retarget(as_held(cluster), scheduler_override)


def _at_most(
    r: _Reader, where: str, count: int, limit: int, flag: str, what: str | None = None
) -> None:
    if count > limit:
        raise r.fail(where, f"{count:,} {what or where}, more than the {limit:,} allowed ({flag})")


def _read_cluster(data: object, source: str, limits: ScenarioLimits) -> Cluster:
    r = _Reader(source)
    top = r.mapping(
        data,
        "",
        {
            "scheduler",
            "policy",
            "max_vgpus_per_card",
            "now",
            "nodes",
            "pods",
            *JOB_KEYS,
            *AUTOSCALER_KEYS,
        },
        {"nodes"},
    )
    scheduler = read_scheduler(r, top.get("scheduler", {}))
    policy = read_policy(r, top.get("policy", {}), scheduler)
    limit = r.integer(
        top.get("max_vgpus_per_card", default_max_vgpus(scheduler)), "max_vgpus_per_card", 1
    )
    listed = r.sequence(top["nodes"], "nodes")
    _at_most(r, "nodes", len(listed), limits.max_nodes, "--scenario.max-nodes")
    nodes = tuple(_node(r, raw, f"nodes[{i}]") for i, raw in enumerate(listed))
    cards = sum(len(n.cards) for n in nodes)
    _at_most(r, "nodes", cards, limits.max_cards, "--scenario.max-cards", "cards")
    _unique(r, [(f"nodes[{i}].name", n.name) for i, n in enumerate(nodes)], "node name")
    requires_memory = profile_for(scheduler.profile).requires_memory
    waiting = r.sequence(top.get("pods", []), "pods")
    _at_most(r, "pods", len(waiting), limits.max_pods, "--scenario.max-pods")
    pods = tuple(_pod(r, raw, f"pods[{i}]", requires_memory) for i, raw in enumerate(waiting))
    _unique(r, [(f"pods[{i}].name", p.name) for i, p in enumerate(pods)], "pod name")
    _check_other_pods(r, nodes, {p.name for p in pods})
    jobs = read_jobs(r, top)
    check_pod_groups(r, pods, jobs)
    now = _time(r, top, "now", "")
    autoscalers = read_autoscalers(r, top)
    cluster = Cluster(nodes, pods, policy, limit, scheduler, jobs, now=now, autoscalers=autoscalers)
    _check_running(r, cluster)
    check_mig_pods(r, cluster)
    return cluster


def _node(r: _Reader, raw: object, where: str) -> Node:
    keys = {"name", "cards", "other_pods", *NODE_FIT_KEYS, *MIG_NODE_KEYS}
    m = r.mapping(raw, where, keys, {"name", "cards"})
    name = r.string(m["name"], f"{where}.name")
    cards = []
    for i, c in enumerate(r.sequence(m["cards"], f"{where}.cards")):
        at = f"{where}.cards[{i}]"
        cm = r.mapping(
            c,
            at,
            {
                "index",
                "memory_mib",
                "model",
                "healthy",
                "uuid",
                "numa",
                "max_vgpus",
                *MIG_CARD_KEYS,
            },
            {"index", "memory_mib"},
        )
        healthy = r.boolean(cm.get("healthy", True), f"{at}.healthy")
        model = r.string(cm["model"], f"{at}.model") if "model" in cm else ""
        cards.append(
            Card(
                index=r.integer(cm["index"], f"{at}.index", 0),
                memory_mib=r.integer(cm["memory_mib"], f"{at}.memory_mib", 1, MAX_MEMORY_MIB),
                model=model,
                healthy=healthy,
                uuid=r.string(cm["uuid"], f"{at}.uuid") if "uuid" in cm else "",
                numa=r.integer(cm["numa"], f"{at}.numa", 0) if "numa" in cm else None,
                max_vgpus=(
                    r.integer(cm["max_vgpus"], f"{at}.max_vgpus", 1) if "max_vgpus" in cm else None
                ),
                mig=read_card_mig(r, cm, at, model),
            )
        )
    if not cards:
        raise r.fail(f"{where}.cards", "a node needs at least one card")
    _unique(r, [(f"{where}.cards[{i}].index", c.index) for i, c in enumerate(cards)], "card index")
    other_pods = None
    if "other_pods" in m:
        at = f"{where}.other_pods"
        other_pods = tuple(
            _other_pod(r, o, f"{at}[{i}]") for i, o in enumerate(r.sequence(m["other_pods"], at))
        )
    node = Node(
        name,
        tuple(cards),
        other_pods,
        **read_node_fit(r, m, where),
        mig_strategy=read_strategy(r, m, where),
    )
    check_node(r, node, where)
    return node


def _other_pod(r: _Reader, raw: object, where: str) -> OtherPod:
    """A non-GPU pod on the node (or one whose vGPUs are not modelled); `blocks` says why
    the cluster-autoscaler would not evict it, null when nothing does."""
    m = r.mapping(raw, where, {"name", "blocks", *POD_FIT_KEYS}, {"name"})
    name = _pod_name(r, m["name"], f"{where}.name")
    blocks = m.get("blocks")
    if blocks is not None and (not isinstance(blocks, str) or not blocks):
        raise r.fail(f"{where}.blocks", f"expected a reason or null, got {_kind(blocks)}")
    # node_selector, affinity, tolerations: known when any is given (snapshot writes
    # `tolerations: []` for a pod that has none)
    return OtherPod(name, blocks, **read_pod_fit(r, m, where))


def _pod_name(r: _Reader, value: object, where: str) -> str:
    name = r.string(value, where)
    if "/" not in name:
        raise r.fail(where, f"expected namespace/pod, got {name!r}")
    return name


def _check_other_pods(r: _Reader, nodes: tuple[Node, ...], gpu_pods: set[str]) -> None:
    """An other pod runs on one node only and is not also one of the GPU pods."""
    items = [
        (f"nodes[{i}].other_pods[{j}].name", p.name)
        for i, n in enumerate(nodes)
        for j, p in enumerate(n.other_pods or ())
    ]
    _unique(r, items, "other pod name")
    for where, name in items:
        if name in gpu_pods:
            raise r.fail(where, f"{name!r} is also listed under pods")


_POD_KEYS = {
    "name",
    "node",
    "cards",
    "request",
    "priority",
    "owner",
    "started",
    "created",
    "scheduled",
    "labels",
    "annotations",
    "invalid",
    *POD_FIT_KEYS,
    *POD_JOB_KEYS,
    *MIG_POD_KEYS,
}


def _pod(r: _Reader, raw: object, where: str, requires_memory: bool = True) -> Pod:
    m = r.mapping(raw, where, _POD_KEYS, {"name"})
    name = _pod_name(r, m["name"], f"{where}.name")
    # A Pending pod whose request could not be read at all (a snapshot of a live cluster
    # keeps it so the report still lists it as `invalid`).
    invalid = r.string(m["invalid"], f"{where}.invalid") if "invalid" in m else None
    if invalid is not None and "node" in m:
        raise r.fail(f"{where}.invalid", "only a Pending pod can have an unreadable request")
    if "request" not in m:
        if invalid is None:
            raise r.fail(f"{where}.request", "missing")
        m = {**m, "request": {"memory_mib": UNREAD_MIB}}
    # Where the profile allows, a request may give a share of each card, or nothing: the
    # whole card. A MIG request names its profile and nothing of a card's share.
    raw = m["request"]
    mig = isinstance(raw, Mapping) and "mig_profile" in raw
    req = r.mapping(
        raw,
        f"{where}.request",
        {"gpus", "mig_profile"}
        if mig
        else {"gpus", "memory_mib", "core_percent", "memory_percent"},
        {"memory_mib"} if requires_memory and not mig else set(),
    )
    if mig:
        requires_memory = False
    least = 1 if invalid is None and requires_memory else UNREAD_MIB
    percent = 0
    if "memory_percent" in req:
        percent = r.integer(req["memory_percent"], f"{where}.request.memory_percent", 1)
        if percent > 100:
            raise r.fail(f"{where}.request.memory_percent", f"must be 1..100, got {percent}")
    request = Request(
        gpus=r.integer(req.get("gpus", 1), f"{where}.request.gpus", 1),
        memory_mib=r.integer(
            req.get("memory_mib", 0), f"{where}.request.memory_mib", least, MAX_MEMORY_MIB
        ),
        core_percent=r.integer(req.get("core_percent", 0), f"{where}.request.core_percent", 0),
        memory_percent=percent,
        mig_profile=r.string(req["mig_profile"], f"{where}.request.mig_profile") if mig else "",
    )
    placement, held = read_placement(r, m, where, mig)
    annotations = _strings(r, m, "annotations", where)
    return Pod(
        name=name,
        request=request,
        placement=placement,
        priority=r.integer(m.get("priority", 0), f"{where}.priority", -(2**31)),
        owner=r.string(m["owner"], f"{where}.owner") if "owner" in m else None,
        annotations=annotations,
        invalid=invalid,
        **read_pod_fit(r, m, where),
        started=_time(r, m, "started", where),
        created=_time(r, m, "created", where),
        scheduled=_time(r, m, "scheduled", where),
        labels=_strings(r, m, "labels", where),
        **read_pod_jobs(r, m, where),
        mig_instances=held,
    )


def _strings(r: _Reader, m: Mapping[str, object], key: str, where: str) -> dict[str, str]:
    """A pod's `annotations` or `labels`: strings to strings."""
    value = m.get(key, {})
    if not isinstance(value, Mapping):
        raise r.fail(f"{where}.{key}", f"expected a mapping, got {_kind(value)}")
    for name, text in value.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise r.fail(f"{where}.{key}.{name}", f"{key} map strings to strings")
    return dict(value)


def _time(r: _Reader, m: Mapping[str, object], key: str, where: str) -> str | None:
    """An RFC 3339 time (`2024-05-01T12:00:00Z`): `now` at the top; a pod's `started`
    (what the plans' disruption cost reads, docs/design.md §8), `created` and `scheduled`
    (its Pending age and scheduling latency, §12.3)."""
    if key not in m:
        return None
    value = m[key]
    at = f"{where}.{key}" if where else key
    if isinstance(value, datetime):  # YAML reads an unquoted time as a datetime
        value = rfc3339(value)
    text = r.string(value, at)
    if parse_time(text) is None:
        raise r.fail(at, f"expected an RFC 3339 time, got {text!r}")
    return text


def _unique(r: _Reader, items: Sequence[tuple[str, object]], what: str) -> None:
    seen: set[object] = set()
    for where, value in items:
        if value in seen:
            raise r.fail(where, f"duplicate {what} {value!r}")
        seen.add(value)


def _check_running(r: _Reader, cluster: Cluster) -> None:
    """Running pods must sit on real cards, split evenly, within each card's room, slots and
    isolation mode (where the profile has one per card), as the profile counts them."""
    rules = profile_of(cluster.scheduler)
    cards = {(n.name, c.index): c for n in cluster.nodes for c in n.cards}
    node_names = {n.name for n in cluster.nodes}
    used: dict[tuple[str, int], list[tuple[str, int, int, int]]] = defaultdict(list)
    for i, pod in enumerate(cluster.pods):
        if pod.placement is None or pod.request.mig_profile:  # MIG: `check_mig_pods`
            continue
        where, req, pl = f"pods[{i}]", pod.request, pod.placement
        if pl.node not in node_names:
            raise r.fail(f"{where}.node", f"unknown node {pl.node!r}")
        if len(pl.cards) != req.gpus or len(set(pl.cards)) != len(pl.cards):
            raise r.fail(
                f"{where}.cards", f"expected {req.gpus} distinct card indices, got {list(pl.cards)}"
            )
        if req.memory_mib % req.gpus or req.core_percent % req.gpus:
            raise r.fail(
                f"{where}.request", f"memory and core must split evenly over {req.gpus} cards"
            )
        shape = Shape.of(req)
        for j, index in enumerate(pl.cards):
            card = cards.get((pl.node, index))
            if card is None:
                raise r.fail(f"{where}.cards[{j}]", f"node {pl.node!r} has no card {index}")
            need = int(rules.card_need(np.array([card.memory_mib], dtype=np.int64), shape)[0])
            used[(pl.node, index)].append((where, need, rules.card_core(shape), int(req.mode)))
    for (node, index), vgpus in used.items():
        card, last = cards[(node, index)], vgpus[-1][0]
        memory = sum(v[1] for v in vgpus)
        if memory > card.memory_mib:
            raise r.fail(
                last, f"overflows {node} card {index}: {memory} MiB allotted of {card.memory_mib}"
            )
        if sum(v[2] for v in vgpus) > 100:
            raise r.fail(last, f"overflows {node} card {index}: more than 100% core allotted")
        if any(mode_conflict(rules, vgpus[0][3], v[3]) for v in vgpus[1:]):
            raise r.fail(last, f"{node} card {index} would mix memory and memory+core isolation")
        slots = cluster.max_vgpus_per_card if card.max_vgpus is None else card.max_vgpus
        if len(vgpus) > slots:
            raise r.fail(last, f"{node} card {index} hosts {len(vgpus)} vGPUs, limit {slots}")
