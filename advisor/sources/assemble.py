"""Live state into the scheduler's `Cluster` (pure: no I/O, no clock).

Cards and running vGPUs come from the exporter's series (docs/design.md §6); Pending pods, and the
priority, owner and annotations of every pod, from Kubernetes. A running pod is its vGPUs
grouped: N = its distinct cards, memory and core = the sums. Stale series are reported and
left out together with what depends on them (a stale node takes its cards and pods along);
whatever the model cannot express is left out with a warning that says what that does to
the picture. With Kubernetes, each node also carries what kube-scheduler's other filters read
(allocatable, labels, taints, cordon), its other pods (`Node.other_pods`: what a drain would
move besides the modelled GPU pods) and the pods that stay with it (`Node.resident_pods`), and
every pod its effective request and node constraints. The scheduler profile is the one named,
or read from the cluster (advisor.sources.profile_detect); under hami and volcano-vgpu the
cards are those the scheduler registered on the node when it did (advisor.sources.registered).
A card in MIG mode carries its GPU instances and its node the device plugin's strategy
(§13); MIG pods come from Kubernetes (`kubemerge`), the instances each holds from the
exporter's per-pod series where it runs GPU processes (`migheld`). The cluster always loads
as a scenario file (§4).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from advisor.core.jobs import NO_JOBS
from advisor.core.mig import MigInstance, layout_problem, table_of
from advisor.core.model import (
    Card,
    Cluster,
    Node,
    Placement,
    Pod,
    PolicyName,
    ProfileName,
    Request,
)
from advisor.core.profiles import profile_for
from advisor.sources.fitting import compare_modes, fit_cards
from advisor.sources.kubemerge import merge_kubernetes, with_other_pods
from advisor.sources.migheld import attributed
from advisor.sources.mignodes import mig_node
from advisor.sources.notes import Notes, names
from advisor.sources.profile_detect import SchedulerChoice, choose_profile, scheduler_settings
from advisor.sources.registered import registered_cards
from advisor.sources.values import (
    CARD_FAMILIES,
    CARD_HEALTH,
    CARD_INFO,
    CARD_MEMORY,
    CARD_MIG_MODE,
    CARD_MODE,
    COLLECTOR_SUCCESS,
    MIB,
    MIG_INSTANCE,
    NODE_INFO,
    VGPU_FAMILIES,
    VGPU_MEMORY,
    KubeNode,
    KubeState,
    Sample,
    Stale,
)
from advisor.words import noun_for


@dataclass(frozen=True, slots=True)
class Assembled:
    cluster: Cluster
    warnings: tuple[str, ...]
    stale: tuple[Stale, ...]
    scheduler: str = "cce (default)"  # the profile and why: "hami (auto: ... on 3 pods)"


@dataclass(slots=True)
class _CardData:
    memory_bytes: float | None = None
    health: float | None = None
    mode: float | None = None
    uuid: str = ""
    model: str = ""
    mig_mode: float | None = None  # xgpu_card_mig_mode: 1 in MIG mode (design §13)
    instances: list[MigInstance] = field(default_factory=list)
    unlisted: bool = False  # an instance series without profile or start


# node -> "namespace/pod" -> gpu_index -> [memory bytes, core percent]
_Vgpus = dict[str, dict[str, dict[str, list[float]]]]


def assemble(
    samples: Iterable[Sample],
    kube: KubeState | None = None,
    *,
    stale_after_s: float = 300.0,
    scheduler: SchedulerChoice = "auto",
    node_policy: PolicyName | None = None,
    card_policy: PolicyName | None = None,
    max_vgpus_per_card: int | None = None,
) -> Assembled:
    """InputError when the cluster carries several schedulers' marks under `auto`, or for a
    card policy the profile does not have; the policies and limit default per profile."""
    notes = Notes()
    chosen = choose_profile(scheduler, kube)
    profile = chosen.profile
    settings, policy, limit = scheduler_settings(
        profile, node_policy, card_policy, max_vgpus_per_card
    )
    fresh = _drop_stale(list(samples), stale_after_s, notes)
    nodes_seen, cards, vgpus = _collect(fresh, notes)
    kube_nodes = {n.name: n for n in kube.nodes} if kube is not None else {}
    nodes = _nodes(nodes_seen, cards, vgpus, kube_nodes, profile, notes)
    running = _running_pods(vgpus, nodes, notes)
    nodes, running, limit = fit_cards(nodes, running, limit, profile, notes)
    if profile_for(profile).one_mode_per_card:  # the card's published mode is the one
        compare_modes(_modes(cards), running, notes)
    pods = running
    if kube is not None:
        pods = merge_kubernetes(running, nodes, kube, notes, settings, attributed(fresh, notes))
        nodes = with_other_pods(nodes, pods, kube)
    jobs, autoscalers = NO_JOBS, kube.autoscalers if kube is not None else ()
    if kube is not None:
        jobs = kube.jobs.jobs
        if profile_for(profile).session.volcano:  # Volcano's configmap: its actions, plugins
            settings = replace(settings, **kube.jobs.settings)
    cluster = Cluster(
        tuple(nodes), tuple(pods), policy, limit, settings, jobs, autoscalers=autoscalers
    )
    how = "--scheduler" if scheduler != "auto" else f"auto: {chosen.evidence}"
    return Assembled(cluster, tuple(notes.warnings), tuple(notes.stale), f"{profile} ({how})")


def _modes(cards: dict[str, dict[str, _CardData]]) -> dict[tuple[str, int], float]:
    return {
        (node, int(index)): data.mode
        for node, per_index in cards.items()
        for index, data in per_index.items()
        if data.mode is not None and index.isascii() and index.isdigit()
    }


def _pod_key(sample: Sample) -> str:
    return f"{sample.label('namespace')}/{sample.label('pod')}"


def _drop_stale(samples: list[Sample], stale_after_s: float, notes: Notes) -> list[Sample]:
    """Fresh samples only; a stale node drops all its series, a stale vGPU its whole pod."""

    def old(s: Sample) -> bool:
        return s.ended or (s.age_s is not None and s.age_s > stale_after_s)

    fresh_nodes = {s.label("node") for s in samples if s.metric == NODE_INFO and not old(s)}
    found: dict[tuple[str, str], Stale] = {}  # (node, subject) -> the oldest evidence
    stale_pods: set[tuple[str, str]] = set()
    for s in samples:
        if not old(s):
            continue
        node = s.label("node")
        if s.metric == NODE_INFO:
            if node in fresh_nodes:
                continue  # a fresh twin (another scrape job) speaks for the node
            notes.stale_nodes.add(node)
            subject = f"node {node}"
        elif s.metric in CARD_FAMILIES:
            subject = f"node {node} card {s.label('gpu_index')}"
        elif s.metric in VGPU_FAMILIES:
            stale_pods.add((node, _pod_key(s)))
            subject = f"pod {_pod_key(s)} on node {node}"
        else:
            continue  # self-metrics and MIG attributions: nothing the model leaves out
        evidence = Stale(subject, s.metric, s.age_s or 0.0, s.ended)
        previous = found.get((node, subject))
        if previous is None or evidence.age_s > previous.age_s:
            found[(node, subject)] = evidence
    notes.stale.extend(
        stale
        for (node, subject), stale in sorted(found.items())
        if node not in notes.stale_nodes or subject == f"node {node}"
    )
    notes.stale_pods = {pod for node, pod in stale_pods if node not in notes.stale_nodes}
    return [
        s
        for s in samples
        if not old(s)
        and s.label("node") not in notes.stale_nodes
        and not (s.metric in VGPU_FAMILIES and (s.label("node"), _pod_key(s)) in stale_pods)
    ]


def _collect(
    fresh: list[Sample], notes: Notes
) -> tuple[set[str], dict[str, dict[str, _CardData]], _Vgpus]:
    nodes: set[str] = set()
    cards: dict[str, dict[str, _CardData]] = defaultdict(dict)
    vgpus: _Vgpus = defaultdict(dict)
    failing: dict[str, set[str]] = defaultdict(set)
    unlabelled = 0
    for s in fresh:
        node = s.label("node")
        if not node:
            unlabelled += 1
            continue
        if s.metric == NODE_INFO:
            nodes.add(node)
        elif s.metric in CARD_FAMILIES:
            data = cards[node].setdefault(s.label("gpu_index"), _CardData())
            data.uuid = data.uuid or s.label("gpu_uuid")
            if s.metric == CARD_INFO:
                data.model = s.label("model")
            elif s.metric == CARD_MEMORY:
                data.memory_bytes = s.value
            elif s.metric == CARD_HEALTH:
                data.health = s.value
            elif s.metric == CARD_MODE:
                data.mode = s.value
            elif s.metric == CARD_MIG_MODE:
                data.mig_mode = s.value
            elif s.metric == MIG_INSTANCE:
                start, profile = s.label("mig_start"), s.label("GPU_I_PROFILE")
                if start.isascii() and start.isdigit() and profile:
                    data.instances.append(MigInstance(profile, int(start)))
                else:  # the exporter could not list the card's instances
                    data.unlisted = True
        elif s.metric in VGPU_FAMILIES:
            if not s.label("namespace") or not s.label("pod"):
                notes.warnings.append(f"node {node}: a {s.metric} series names no pod; ignored")
                continue
            per_card = vgpus[node].setdefault(_pod_key(s), {})
            totals = per_card.setdefault(s.label("gpu_index"), [0.0, 0.0])
            totals[0 if s.metric == VGPU_MEMORY else 1] += s.value
        elif s.metric == COLLECTOR_SUCCESS and s.value == 0:
            failing[node].add(s.label("collector"))
    if unlabelled:
        notes.warnings.append(
            f"{unlabelled} series without a node label ignored "
            "(the scrape config must add `node`, see deploy/prometheus)"
        )
    for node, collectors in sorted(failing.items()):
        notes.warnings.append(
            f"node {node}: exporter {noun_for(len(collectors), 'collector')} {names(collectors)} "
            "failing: "
            "its series may be incomplete or old"
        )
    return nodes | set(cards) | set(vgpus), cards, vgpus


def _nodes(
    node_names: set[str],
    cards: dict[str, dict[str, _CardData]],
    vgpus: _Vgpus,
    kube_nodes: Mapping[str, KubeNode],
    profile: ProfileName,
    notes: Notes,
) -> list[Node]:
    nodes: list[Node] = []
    unavailable: list[str] = []
    for name in sorted(node_names):
        allotted: dict[str, float] = defaultdict(float)
        for per_card in vgpus.get(name, {}).values():
            for index, (memory, _core) in per_card.items():
                allotted[index] += memory
        data = dict(cards.get(name, {}))
        for index in allotted:
            data.setdefault(index, _CardData())
        built = [
            card
            for index, card_data in sorted(data.items())
            if (card := _card(name, index, card_data, allotted[index], notes)) is not None
        ]
        kube_node = kube_nodes.get(name)
        built = registered_cards(name, built, kube_node, profile, notes)
        if not built:
            notes.warnings.append(f"node {name}: no card with a known memory size; left out")
            continue
        if kube_node is not None and kube_node.unavailable:
            unavailable.append(f"{name} ({kube_node.unavailable})")
            built = [replace(c, healthy=False) for c in built]
        node = Node(name, tuple(sorted(built, key=lambda c: c.index)))
        if kube_node is not None:
            notes.warnings.extend(kube_node.problems)
            fit = kube_node.scheduling
            node = replace(
                node,
                allocatable=fit.allocatable,
                labels=fit.labels,
                taints=fit.taints,
                unschedulable=fit.unschedulable,
            )
        nodes.append(mig_node(node, notes))
    if unavailable:
        notes.warnings.append(
            f"nodes that take no new pods, modelled with unavailable cards: {names(unavailable)}"
        )
    return nodes


def _card(node: str, index: str, data: _CardData, allotted: float, notes: Notes) -> Card | None:
    where = f"node {node} card {index or data.uuid or '?'}"
    if not (index.isascii() and index.isdigit()):  # isdigit alone takes "²", int() does not
        notes.warnings.append(f"{where}: gpu_index is not a number; card left out")
        return None
    if data.memory_bytes is None or data.memory_bytes < MIB:
        if allotted <= 0:
            notes.warnings.append(f"{where}: memory size unknown and nothing allotted; left out")
            return None
        notes.warnings.append(
            f"{where}: memory size unknown ({CARD_MEMORY} missing); modelled as unavailable, "
            "as large as its allotments"
        )
        memory_mib, healthy = math.ceil(allotted / MIB), False
    else:
        memory_mib = int(data.memory_bytes // MIB)
        healthy = data.health is None or data.health == 0
        if data.health is None:
            notes.warnings.append(f"{where}: {CARD_HEALTH} missing; assumed healthy")
    return Card(
        int(index), memory_mib, data.model, healthy, data.uuid, mig=_mig(where, data, notes)
    )


def _mig(where: str, data: _CardData, notes: Notes) -> tuple[MigInstance, ...] | None:
    """A card in MIG mode takes MIG pods only (design §13): its instances as the exporter
    lists them; none where its model's profile table is unknown or the layout breaks it
    (then no MIG pod is placed on it either)."""
    if data.mig_mode != 1:
        return None
    instances = tuple(sorted(set(data.instances), key=lambda i: i.start))
    table = table_of(data.model)
    if data.unlisted:
        problem: str | None = (
            "the exporter could not list its GPU instances (NVML needs a privileged caller)"
        )
    elif table is None:
        problem = f"no MIG profile table for model {data.model or '?'}"
    else:
        problem = layout_problem(table, instances)
    if problem is not None:
        notes.warnings.append(f"{where}: in MIG mode, but {problem}; its instances left out")
        return ()
    return instances


def _running_pods(vgpus: _Vgpus, nodes: list[Node], notes: Notes) -> list[Pod]:
    known = {(n.name, str(c.index)) for n in nodes for c in n.cards}
    mig = {(n.name, str(c.index)) for n in nodes for c in n.cards if c.mig is not None}
    pods: list[Pod] = []
    placed: dict[str, str] = {}
    for node in sorted(vgpus):
        for name, per_card in sorted(vgpus[node].items()):
            where = f"pod {name} on node {node}"
            if any((node, index) not in known for index in per_card):
                notes.warnings.append(f"{where}: holds a card the model left out; pod left out")
                continue
            if any((node, index) in mig for index in per_card):
                notes.warnings.append(f"{where}: vGPUs on a card in MIG mode; pod left out")
                continue
            memories = {round(memory / MIB) for memory, _ in per_card.values()}
            cores = {round(core) for _, core in per_card.values()}
            if len(memories) > 1 or len(cores) > 1:
                notes.warnings.append(
                    f"{where}: not split evenly over its cards (MiB {sorted(memories)}, "
                    f"core {sorted(cores)}), which the model cannot express; pod left out, "
                    "its cards look freer than they are"
                )
                continue
            memory, core = memories.pop(), cores.pop()
            if memory < 1:
                notes.warnings.append(f"{where}: no memory allotted; pod left out")
                continue
            if name in placed:
                notes.warnings.append(
                    f"{where}: also reported on node {placed[name]}; kept there only"
                )
                continue
            placed[name] = node
            n = len(per_card)
            request = Request(gpus=n, memory_mib=memory * n, core_percent=core * n)
            indices = tuple(sorted(int(index) for index in per_card))
            pods.append(Pod(name, request, Placement(node, indices)))
    return pods
