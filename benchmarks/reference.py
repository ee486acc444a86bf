"""A plain-Python reference scheduler: the baseline the core is timed against, and an
independent cross-check of its answers.

It follows docs/design.md §1–§3 the obvious way — for every Pending pod, one loop over every
node's cards — with none of the core's arrays, caches or shortcuts, and shares no code with
it beyond the frozen model values it reads. Nodes score by the mean allotted fraction of
their healthy cards, summed card by card (`sum(fractions) / len(fractions)`), ties by name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from advisor.core.model import Cluster, Placement, Pod, PolicyName

UNUSED, MEMORY, MEMORY_CORE = 2, 0, 1
# Card-level rejections in the order docs/design.md §3 lists them checked.
CARD_CHECKS = ("unhealthy", "mode-conflict", "vgpu-limit", "card-memory", "card-core")
NODE_REASONS = ("too-few-cards", *CARD_CHECKS)


@dataclass(slots=True)
class RefCard:
    index: int
    capacity: int
    healthy: bool
    free_memory: int
    free_core: int = 100
    vgpus: int = 0
    mode: int = UNUSED


@dataclass(slots=True)
class RefNode:
    name: str
    cards: list[RefCard]


@dataclass(frozen=True, slots=True)
class Verdict:
    pod: Pod
    cause: str
    placement: Placement | None = None
    cluster_free_sufficient: bool | None = None
    reason_counts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class _Ask:
    gpus: int
    memory: int  # per card, MiB
    core: int  # per card, %
    mode: int


def _problem(pod: Pod) -> bool:
    """True when the request breaks a rule of §1."""
    if pod.invalid is not None:
        return True
    n, mem, core = pod.request.gpus, pod.request.memory_mib, pod.request.core_percent
    if n < 1 or mem < 128 or mem > 16384 * 128 or mem % n or (mem // n) % 128:
        return True
    return core < 0 or core % n != 0 or (core // n) % 5 != 0 or core // n > 100


class ReferenceScheduler:
    """One simulated scheduling cycle, written as plainly as possible."""

    def __init__(self, cluster: Cluster) -> None:
        self.node_policy: PolicyName = cluster.policy.node
        self.card_policy: PolicyName = cluster.policy.card
        self.limit = cluster.max_vgpus_per_card
        self.nodes = [
            RefNode(
                n.name, [RefCard(c.index, c.memory_mib, c.healthy, c.memory_mib) for c in n.cards]
            )
            for n in cluster.nodes
        ]
        by_name = {node.name: node for node in self.nodes}
        self.pending = [p for p in cluster.pods if p.placement is None]
        for pod in cluster.pods:
            if pod.placement is not None:
                node = by_name[pod.placement.node]
                chosen = [c for c in node.cards if c.index in pod.placement.cards]
                self._bind(chosen, _ask(pod))

    def run(self) -> list[Verdict]:
        """Every Pending pod in queue order (priority desc, then list order), each seeing
        the placements before it."""
        order = sorted(range(len(self.pending)), key=lambda i: (-self.pending[i].priority, i))
        return [self.visit(self.pending[i]) for i in order]

    def visit(self, pod: Pod) -> Verdict:
        if _problem(pod):
            return Verdict(pod, "invalid")
        ask = _ask(pod)
        if not self._could_ever_fit(ask):
            return Verdict(pod, "unsatisfiable")
        best: tuple[float, str] | None = None
        best_node: RefNode | None = None
        best_cards: list[RefCard] = []
        for node in self.nodes:
            cards = self._choose_cards(node, ask)
            if cards is None:
                continue
            score = self._score(node, cards, ask)
            key = (-score if self.node_policy == "binpack" else score, node.name)
            if best is None or key < best:
                best, best_node, best_cards = key, node, cards
        if best_node is not None:
            self._bind(best_cards, ask)
            placement = Placement(best_node.name, tuple(sorted(c.index for c in best_cards)))
            return Verdict(pod, "schedulable", placement)
        return self._explain(pod, ask)

    # -- placement -----------------------------------------------------------------

    def _eligible(self, card: RefCard, ask: _Ask) -> bool:
        return (
            card.healthy
            and card.free_memory >= ask.memory
            and card.vgpus < self.limit
            and card.mode in (UNUSED, ask.mode)
            and (ask.mode != MEMORY_CORE or card.free_core >= ask.core)
        )

    def _choose_cards(self, node: RefNode, ask: _Ask) -> list[RefCard] | None:
        eligible = [c for c in node.cards if self._eligible(c, ask)]
        if len(eligible) < ask.gpus:
            return None
        sign = 1 if self.card_policy == "binpack" else -1
        eligible.sort(key=lambda c: (sign * c.free_memory, c.index))
        return eligible[: ask.gpus]

    def _score(self, node: RefNode, chosen: list[RefCard], ask: _Ask) -> float:
        fractions = []
        for card in node.cards:
            if card.healthy:
                extra = ask.memory if any(card is c for c in chosen) else 0
                fractions.append((card.capacity - card.free_memory + extra) / card.capacity)
        return sum(fractions) / len(fractions)

    def _bind(self, cards: list[RefCard], ask: _Ask) -> None:
        for card in cards:
            card.free_memory -= ask.memory
            card.free_core -= ask.core
            card.vgpus += 1
            card.mode = ask.mode

    # -- diagnosis -------------------------------------------------------------------

    def _could_ever_fit(self, ask: _Ask) -> bool:
        """Some node, emptied and repaired, has N cards big enough."""
        if self.limit < 1:
            return False
        return any(
            sum(1 for c in node.cards if c.capacity >= ask.memory) >= ask.gpus
            for node in self.nodes
        )

    def _explain(self, pod: Pod, ask: _Ask) -> Verdict:
        reasons: Counter[str] = Counter()
        fragmented = False
        # Only the healthy cards big enough for one slice (with a vGPU slot) make room.
        big = [
            [c for c in node.cards if c.healthy and c.capacity >= ask.memory and self.limit >= 1]
            for node in self.nodes
        ]
        for node, cards in zip(self.nodes, big, strict=True):
            reasons[self._node_reason(node, ask)] += 1
            memory = sum(c.free_memory for c in cards)
            core = sum(c.free_core for c in cards)
            enough_core = ask.mode != MEMORY_CORE or core >= ask.gpus * ask.core
            if len(cards) >= ask.gpus and memory >= ask.gpus * ask.memory and enough_core:
                fragmented = True
        counts = tuple(sorted(reasons.items(), key=lambda kv: (-kv[1], NODE_REASONS.index(kv[0]))))
        if fragmented:
            return Verdict(pod, "fragmentation", reason_counts=counts)
        # Consolidating needs a node with enough such cards.
        sufficient = any(len(cards) >= ask.gpus for cards in big)
        sufficient = sufficient and sum(c.free_memory for b in big for c in b) >= (
            ask.gpus * ask.memory
        )
        if ask.mode == MEMORY_CORE:
            pooled_core = sum(c.free_core for b in big for c in b)
            sufficient = sufficient and pooled_core >= ask.gpus * ask.core
        return Verdict(pod, "capacity", None, sufficient, counts)

    def _node_reason(self, node: RefNode, ask: _Ask) -> str:
        """too-few-cards when the node is short of cards or some of its cards qualify;
        otherwise the commonest card-level reason (ties in check order)."""
        per_reason = dict.fromkeys(CARD_CHECKS, 0)
        eligible = 0
        for card in node.cards:
            reason = self._card_reason(card, ask)
            if reason is None:
                eligible += 1
            else:
                per_reason[reason] += 1
        if len(node.cards) < ask.gpus or eligible > 0:
            return "too-few-cards"
        return max(CARD_CHECKS, key=lambda r: (per_reason[r], -CARD_CHECKS.index(r)))

    def _card_reason(self, card: RefCard, ask: _Ask) -> str | None:
        if not card.healthy:
            return "unhealthy"
        if card.mode not in (UNUSED, ask.mode):
            return "mode-conflict"
        if card.vgpus >= self.limit:
            return "vgpu-limit"
        if card.free_memory < ask.memory:
            return "card-memory"
        if ask.mode == MEMORY_CORE and card.free_core < ask.core:
            return "card-core"
        return None


def _ask(pod: Pod) -> _Ask:
    r = pod.request
    return _Ask(
        r.gpus,
        r.memory_mib // r.gpus,
        r.core_percent // r.gpus,
        MEMORY_CORE if r.core_percent > 0 else MEMORY,
    )


def reference_diagnose(cluster: Cluster) -> list[Verdict]:
    return ReferenceScheduler(cluster).run()


def reference_figures(cluster: Cluster, verdicts: list[Verdict]) -> dict[str, object]:
    """The replay figures of docs/design.md §7 that a cross-check compares."""
    units = 1000
    placed = sum(v.pod.request.memory_mib // 128 for v in verdicts if v.placement is not None)
    failed = Counter(v.cause for v in verdicts if v.placement is None)
    return {
        "pods": len(cluster.pods),
        "placed_gpus": placed / units,
        "failed": dict(sorted(failed.items())),
    }
