"""The card view (`advisor.output.card_view`) read into frozen values: nodes by name, cards
by index, the allotments on each card, and what kube-scheduler's other filters read of a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.render.common.values import GIB, as_int, as_list, as_map, as_str

MODE_NAMES: Mapping[int, str] = {0: "memory isolation", 1: "memory+core isolation", 2: "unused"}


def mode_name(mode: int) -> str:
    return MODE_NAMES.get(mode, f"mode {mode}")


@dataclass(frozen=True, slots=True)
class Allotment:
    pod: str
    memory_mib: int
    core_percent: int
    pending: bool


@dataclass(frozen=True, slots=True)
class MigSlice:
    """One GPU instance of a MIG card: profile, first memory slice, slices taken, holder."""

    profile: str
    start: int
    span: int
    pod: str | None
    pending: bool

    @property
    def text(self) -> str:
        holder = self.pod or "free"
        return f"{self.profile}@{self.start} {holder}" + (" (pending)" if self.pending else "")


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
    mig: tuple[MigSlice, ...] | None = None  # a card in MIG mode: its instances

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
        mig=_mig(raw.get("mig")),
    )


def _mig(value: Any) -> tuple[MigSlice, ...] | None:
    if not isinstance(value, list):
        return None
    out = []
    for item in map(as_map, value):
        pod = as_str(item.get("pod"))
        span = min(max(as_int(item.get("span"), 1), 1), 8)
        pending = item.get("pending") is True
        start = as_int(item.get("start"))
        out.append(MigSlice(as_str(item.get("profile"), "?"), start, span, pod or None, pending))
    return tuple(sorted(out, key=lambda s: s.start))


def mig_json(card: CardView) -> list[dict[str, Any]]:
    """A card's instances back in the card view's form (none: not in MIG mode)."""
    return [
        {"profile": s.profile, "start": s.start, "span": s.span, "pending": s.pending}
        | ({"pod": s.pod} if s.pod else {})
        for s in card.mig or ()
    ]


def node_views(view: Mapping[str, Any]) -> list[NodeView]:
    """Nodes by name, cards by index: stable output whatever order the producer used."""
    nodes = []
    for raw in map(as_map, as_list(view.get("nodes"))):
        cards = sorted((_card(as_map(c)) for c in as_list(raw.get("cards"))), key=lambda c: c.index)
        name = as_str(raw.get("name"), "?")
        nodes.append(NodeView(name=name, cards=tuple(cards), fit=_node_fit(raw)))
    return sorted(nodes, key=lambda node: node.name)
