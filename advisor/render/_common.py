"""What the Markdown and HTML reports share: wording, counts and reading the plain dicts.

Both renderers take the §5 diagnosis JSON and the post-cycle card view as plain
JSON-ready mappings, so they read them tolerantly: a missing or odd value becomes a
neutral default rather than an exception (a report must never crash a cron run).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# CAUSES: the causes in the core's order (docs/design.md §3), one list, so a new cause reaches
# every report, chart and count without a second copy here.
from advisor.core.diagnose import CAUSES

MODE_NAMES: Mapping[int, str] = {0: "memory isolation", 1: "memory+core isolation", 2: "unused"}


def plural(count: int, noun: str) -> str:
    """ "1 plan", "2 plans": English for a count (nouns with a plain -s plural)."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def as_int(value: Any, default: int = 0) -> int:
    """An int from JSON (bools are not counts; floats are truncated)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value:  # not NaN
        return int(value)
    return default


def as_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def mode_name(mode: int) -> str:
    return MODE_NAMES.get(mode, f"mode {mode}")


def pods_of(diagnosis: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [as_map(pod) for pod in as_list(diagnosis.get("pods"))]


def summary_counts(diagnosis: Mapping[str, Any]) -> dict[str, int]:
    """Counts per cause plus "pending"; taken from "summary", else counted from the pods."""
    summary = as_map(diagnosis.get("summary"))
    pods = pods_of(diagnosis)
    counts: dict[str, int] = {}
    for cause in CAUSES:
        if cause in summary:
            counts[cause] = as_int(summary.get(cause))
        else:
            counts[cause] = sum(1 for pod in pods if pod.get("cause") == cause)
    counts["pending"] = (
        as_int(summary.get("pending"), len(pods)) if "pending" in summary else len(pods)
    )
    return counts


def headline(diagnosis: Mapping[str, Any]) -> str:
    """e.g. "3 Pending GPU pods: 1 schedulable, 1 fragmentation, 1 capacity"."""
    counts = summary_counts(diagnosis)
    pending = counts["pending"]
    if pending == 0:
        return "No Pending GPU pods"
    noun = "pod" if pending == 1 else "pods"
    parts = [f"{counts[cause]} {cause}" for cause in CAUSES if counts[cause]]
    return (
        f"{pending} Pending GPU {noun}: " + ", ".join(parts)
        if parts
        else f"{pending} Pending GPU {noun}"
    )


def profile_of(data: Mapping[str, Any]) -> str | None:
    """The scheduler profile that judged a diagnosis or plan JSON, when it is not cce (the
    reports read as they always did for cce clusters, and for JSON that names none)."""
    profile = as_str(as_map(data.get("scheduler")).get("profile"))
    return profile if profile and profile != "cce" else None


def policy_text(diagnosis: Mapping[str, Any]) -> str:
    policy = as_map(diagnosis.get("policy"))
    node = as_str(policy.get("node"), "binpack")
    card = as_str(policy.get("card"), "binpack")
    return f"node {node}, card {card}"


def judged_by(data: Mapping[str, Any]) -> str:
    """ "policy: node binpack, card binpack", led by "scheduler: hami; " outside cce."""
    profile = profile_of(data)
    policy = f"policy: {policy_text(data)}"
    return policy if profile is None else f"scheduler: {profile}; {policy}"


def format_request(request: Mapping[str, Any]) -> str:
    """Per-card shape as the scheduler sees it: "2 × 4096 MiB + 2 × 10 % core"; outside cce
    also "1 × 50 % of the card" (a share) and "2 × whole card" (neither memory nor share)."""
    gpus = as_int(request.get("gpus"), 1)
    memory = as_int(request.get("memory_mib"))
    core = as_int(request.get("core_percent"))
    share = as_int(request.get("memory_percent"))
    whole = request.get("whole_card") is True
    if (share or whole) and gpus >= 1 and core % gpus == 0:
        # A share wins over memory in volcano-vgpu, memory over a share in hami: show both.
        text = f"{gpus} × " + (f"{share} % of the card" if share else "whole card")
        if share and memory and memory % gpus == 0:
            text += f" or {memory // gpus} MiB"
        return f"{text} + {gpus} × {core // gpus} % core" if core else text
    if gpus < 1 or memory % gpus or core % gpus:
        # Not an even split (an invalid pod): show the totals rather than a false shape.
        text = f"{memory} MiB over {gpus} cards"
        return f"{text} + {core} % core" if core else text
    text = f"{gpus} × {memory // gpus} MiB"
    return f"{text} + {gpus} × {core // gpus} % core" if core else text


def pod_request_text(pod: Mapping[str, Any]) -> str:
    """The GPU shape, then what else binds the pod to a node when anything does:
    "1 × 49152 MiB · cpu 8, memory 64Gi · nodeSelector nodepool=a100"."""
    request = as_map(pod.get("request"))
    parts = [format_request(request) if request else "?"]
    resources = as_map(pod.get("resources"))
    asked = [f"{key} {as_str(resources.get(key))}" for key in ("cpu", "memory") if key in resources]
    if asked:
        parts.append(", ".join(asked))
    selector = as_map(pod.get("node_selector"))
    if selector:
        pairs = ", ".join(f"{key}={as_str(value)}" for key, value in sorted(selector.items()))
        parts.append(f"nodeSelector {pairs}")
    return " · ".join(parts)


def format_cards(cards: Sequence[Any]) -> str:
    indices = [str(as_int(card)) for card in cards]
    return ("card " if len(indices) == 1 else "cards ") + ", ".join(indices)


def format_placement(placement: Mapping[str, Any]) -> str:
    node = as_str(placement.get("node"), "?")
    return f"fits on {node}, {format_cards(as_list(placement.get('cards')))}"


def cause_label(pod: Mapping[str, Any]) -> str:
    """The cause, with the capacity sub-case that decides what to do."""
    cause = as_str(pod.get("cause"), "unknown")
    if cause == "capacity" and "cluster_free_sufficient" in pod:
        return (
            "capacity (consolidate)"
            if pod.get("cluster_free_sufficient")
            else "capacity (scale up)"
        )
    return cause


def explanation(pod: Mapping[str, Any]) -> str:
    """Where the pod fits, or why it does not: the message, led by the node summary
    (kube-scheduler's FitError sentence, "0/3 nodes are available: 3 too-few-cards.")."""
    placement = as_map(pod.get("placement"))
    message = as_str(pod.get("message"))
    if pod.get("cause") == "schedulable" and placement:
        return format_placement(placement) + tie_note(message)
    summary = as_str(pod.get("node_summary"))
    if summary and summary not in message:
        if not message:
            return summary
        # The summary is a sentence of its own; an older report's ("0/3 nodes fit: ...") is not.
        return f"{summary} {message}" if summary.endswith(".") else f"{summary}; {message}"
    return message


def tie_note(message: str) -> str:
    """The message's note that the node was a random tie (hami, volcano-vgpu): " (3 nodes
    score the same ... the real pick may differ)", or "" when the pick was not a tie."""
    _, bracket, note = message.partition(" (")
    return f" ({note}" if bracket and "may differ" in note else ""


@dataclass(frozen=True, slots=True)
class Advice:
    key: str  # cause, or "capacity-consolidate" / "capacity-scale-up"
    title: str
    text: str


ADVICE: Mapping[str, Advice] = {
    advice.key: advice
    for advice in (
        Advice(
            "schedulable",
            "Schedulable",
            "These fit on the cards shown in this simulated cycle, on a node that also has the "
            "cpu, memory and pod slot they ask for and that their node selector, affinity and "
            "tolerations admit. If they stay Pending, the node is not what blocks them: look at "
            "quotas, pod affinity, topology spread, volumes or ports.",
        ),
        Advice(
            "node-resources",
            "Node resources",
            "Their GPUs fit now on a node they may use, but that node lacks the cpu, memory or "
            "pod slots they request. Free or add cpu and memory on the GPU nodes, not GPUs: "
            "check the pod's requests (are they what it needs?), and look at the other pods on "
            "the GPU nodes (CPU-only pods that could run elsewhere).",
        ),
        Advice(
            "fragmentation",
            "Fragmentation",
            "The free memory is there on one node, but split wrongly across its cards, held by "
            "a card of the other isolation mode, or behind the vGPU limit. Rebalance "
            "(`xgpu-advisor plan`) or move small pods off these cards; do not add nodes.",
        ),
        Advice(
            "capacity-consolidate",
            "Capacity, consolidation would help",
            "No single node has enough free, but the cluster as a whole does. Consolidating "
            "pods across nodes (`xgpu-advisor plan`) can make room; scaling up would waste money.",
        ),
        Advice(
            "capacity-scale-up",
            "Capacity, scale up",
            "The whole cluster lacks the free memory or core for these. Add GPU nodes or evict "
            "lower-priority pods.",
        ),
        Advice(
            "capacity",
            "Capacity",
            "No node has enough free in total. Add GPU nodes, evict lower-priority pods, or "
            "consolidate if the cluster as a whole has room.",
        ),
        Advice(
            "unsatisfiable",
            "Unsatisfiable",
            "No node the pod may use (its node selector, affinity and tolerations decide) has "
            "enough cards of the size asked for, or the allocatable cpu and memory it requests, "
            "even empty and repaired. Shrink the request (fewer cards, less memory per card, "
            "less cpu or memory) or add a node with larger or more cards that the pod may use.",
        ),
        Advice(
            "invalid",
            "Invalid request",
            "The request breaks a rule of the even-split model (see the message). Fix the pod's "
            "GPU resources; it will never be scheduled as it is.",
        ),
    )
}


def advice_key(pod: Mapping[str, Any]) -> str:
    cause = as_str(pod.get("cause"), "unknown")
    if cause == "capacity" and "cluster_free_sufficient" in pod:
        return "capacity-consolidate" if pod.get("cluster_free_sufficient") else "capacity-scale-up"
    return cause


def grouped_advice(diagnosis: Mapping[str, Any]) -> list[tuple[Advice, list[str]]]:
    """Each kind of advice that applies, in ADVICE order, with the pods it concerns."""
    groups: dict[str, list[str]] = {}
    for pod in pods_of(diagnosis):
        groups.setdefault(advice_key(pod), []).append(as_str(pod.get("pod"), "?"))
    return [(advice, groups[key]) for key, advice in ADVICE.items() if key in groups]


@dataclass(frozen=True, slots=True)
class Allotment:
    pod: str
    memory_mib: int
    core_percent: int
    pending: bool


@dataclass(frozen=True, slots=True)
class CardView:
    index: int
    memory_mib: int
    model: str
    healthy: bool
    mode: int
    vgpus: int
    core_allotted_percent: int
    allotments: tuple[Allotment, ...]

    @property
    def allotted_mib(self) -> int:
        return sum(a.memory_mib for a in self.allotments)

    @property
    def pending_mib(self) -> int:
        return sum(a.memory_mib for a in self.allotments if a.pending)

    @property
    def free_mib(self) -> int:
        return max(self.memory_mib - self.allotted_mib, 0)


@dataclass(frozen=True, slots=True)
class NodeFit:
    """What kube-scheduler's other filters read of a node, as the card view carries it."""

    cpu_allocatable_milli: int | None = None
    memory_allocatable_bytes: int | None = None
    cpu_requested_milli: int = 0
    memory_requested_bytes: int = 0
    taints: tuple[str, ...] = ()
    unschedulable: bool = False

    def notes(self) -> list[str]:
        """ "cpu 7.5 of 8 requested", "memory 20 of 30 GiB requested", "taint k=v:NoSchedule",
        "cordoned": what a node panel shows beside its cards (nothing when none known)."""
        notes = []
        if self.cpu_allocatable_milli is not None:
            used, total = self.cpu_requested_milli / 1000, self.cpu_allocatable_milli / 1000
            notes.append(f"cpu {_figure(used)} of {_figure(total)} requested")
        if self.memory_allocatable_bytes is not None:
            used, total = self.memory_requested_bytes / GIB, self.memory_allocatable_bytes / GIB
            notes.append(f"memory {_figure(used)} of {_figure(total)} GiB requested")
        notes += [f"taint {taint}" for taint in self.taints]
        if self.unschedulable:
            notes.append("cordoned")
        return notes


GIB = 2**30


def _figure(value: float) -> str:
    """At most one decimal, none when whole: 7.5, 8, 0.3."""
    return f"{value:.1f}".removesuffix(".0")


def _optional_int(value: Any) -> int | None:
    """An int, or None when absent or not a number (unknown, so never shown as 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return int(value)


def node_fit_json(fit: NodeFit) -> dict[str, Any]:
    """A NodeFit back in the card view's form (the inverse of reading it)."""
    data: dict[str, Any] = {}
    if fit.cpu_allocatable_milli is not None or fit.memory_allocatable_bytes is not None:
        data["resources"] = {
            "cpu_allocatable_milli": fit.cpu_allocatable_milli,
            "memory_allocatable_bytes": fit.memory_allocatable_bytes,
            "cpu_requested_milli": fit.cpu_requested_milli,
            "memory_requested_bytes": fit.memory_requested_bytes,
        }
    if fit.taints:
        data["taints"] = list(fit.taints)
    if fit.unschedulable:
        data["unschedulable"] = True
    return data


def _node_fit(raw: Mapping[str, Any]) -> NodeFit:
    resources = as_map(raw.get("resources"))
    return NodeFit(
        cpu_allocatable_milli=_optional_int(resources.get("cpu_allocatable_milli")),
        memory_allocatable_bytes=_optional_int(resources.get("memory_allocatable_bytes")),
        cpu_requested_milli=as_int(resources.get("cpu_requested_milli")),
        memory_requested_bytes=as_int(resources.get("memory_requested_bytes")),
        taints=tuple(as_str(t, "?") for t in as_list(raw.get("taints"))),
        unschedulable=raw.get("unschedulable") is True,
    )


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    cards: tuple[CardView, ...]
    fit: NodeFit = NodeFit()


def _card(raw: Mapping[str, Any]) -> CardView:
    allotments = tuple(
        Allotment(
            pod=as_str(item.get("pod"), "?"),
            memory_mib=max(as_int(item.get("memory_mib")), 0),
            core_percent=as_int(item.get("core_percent")),
            pending=bool(item.get("pending")),
        )
        for item in map(as_map, as_list(raw.get("allotments")))
    )
    return CardView(
        index=as_int(raw.get("index")),
        memory_mib=max(as_int(raw.get("memory_mib")), 0),
        model=as_str(raw.get("model")),
        healthy=raw.get("healthy", True) is not False,
        mode=as_int(raw.get("mode"), 2),
        vgpus=as_int(raw.get("vgpus"), len(allotments)),
        core_allotted_percent=as_int(raw.get("core_allotted_percent")),
        allotments=allotments,
    )


def node_views(view: Mapping[str, Any]) -> list[NodeView]:
    """Nodes by name, cards by index: stable output whatever order the producer used."""
    nodes = []
    for raw in map(as_map, as_list(view.get("nodes"))):
        cards = sorted((_card(as_map(c)) for c in as_list(raw.get("cards"))), key=lambda c: c.index)
        name = as_str(raw.get("name"), "?")
        nodes.append(NodeView(name=name, cards=tuple(cards), fit=_node_fit(raw)))
    return sorted(nodes, key=lambda node: node.name)


def pods_for_node(diagnosis: Mapping[str, Any], node: str) -> Iterator[Mapping[str, Any]]:
    """Pending pods placed on this node by the cycle, or whose diagnosis names it."""
    for pod in pods_of(diagnosis):
        placement = as_map(pod.get("placement"))
        if placement.get("node") == node or node in as_map(pod.get("nodes")):
            yield pod
