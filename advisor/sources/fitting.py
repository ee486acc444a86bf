"""Make the live state one the model can hold, under the cluster's scheduler profile.

What the exporters report was placed by the real scheduler, yet the model's invariants may
not hold (overcommit, a card hosting more vGPUs than the limit): each is made to hold with
a warning saying what that does to the picture. CCE's one-isolation-mode-per-card rule, and
its `gpu_schedule_policy` check, apply under cce only; HAMi and Volcano vGPU have no such rule.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from advisor.core.model import Node, Pod, ProfileName
from advisor.core.profiles import profile_for
from advisor.core.profiles.base import mode_conflict
from advisor.errors import known
from advisor.sources.notes import Notes
from advisor.sources.values import CARD_MODE

CardKey = tuple[str, int]  # (node, card index)


def fit_cards(
    nodes: list[Node], pods: list[Pod], limit: int, profile: ProfileName, notes: Notes
) -> tuple[list[Node], list[Pod], int]:
    """At most 100 % core per card (and, under cce, one mode), memory within the card
    (overcommit grows the card), vGPUs within the card's slots or the cluster's limit."""
    pods = _drop_unholdable(pods, profile, notes)
    usage = by_card(pods)
    grown: list[Node] = []
    most = 0
    for node in nodes:
        cards = []
        for card in node.cards:
            on_card = usage.get((node.name, card.index), [])
            memory = sum(p.request.card_memory_mib for p in on_card)
            if memory > card.memory_mib:
                notes.warnings.append(
                    f"node {node.name} card {card.index}: {memory} MiB allotted of "
                    f"{card.memory_mib} (overcommit?); modelled as {memory} MiB"
                )
            card = replace(card, memory_mib=max(memory, card.memory_mib))
            if card.max_vgpus is None:
                most = max(most, len(on_card))
            elif len(on_card) > card.max_vgpus:
                notes.warnings.append(
                    f"node {node.name} card {card.index} hosts {len(on_card)} vGPUs, above its "
                    f"{card.max_vgpus} registered slots; modelled with {len(on_card)}"
                )
                card = replace(card, max_vgpus=len(on_card))
            cards.append(card)
        grown.append(replace(node, cards=tuple(cards)))
    if most > limit:
        notes.warnings.append(
            f"a card hosts {most} vGPUs, above the limit of {limit}; the limit is raised to {most}"
        )
        limit = most
    return grown, pods, limit


def _drop_unholdable(pods: list[Pod], name: ProfileName, notes: Notes) -> list[Pod]:
    profile = profile_for(name)
    while True:
        drop: dict[str, str] = {}
        for (host, index), on_card in sorted(by_card(pods).items()):
            first_mode = on_card[0].request.mode
            core = 0
            for pod in on_card:
                core += pod.request.card_core_percent
                if mode_conflict(profile, first_mode, pod.request.mode):
                    drop[pod.name] = f"node {host} card {index} mixes isolation modes"
                elif core > 100:
                    drop[pod.name] = f"node {host} card {index} has more than 100% core allotted"
        if not drop:
            return pods
        for name, why in sorted(drop.items()):
            notes.warnings.append(
                f"pod {name}: {why}, which the model cannot hold; pod left out, "
                "its cards look freer than they are"
            )
        pods = [p for p in pods if p.name not in drop]


def by_card(pods: list[Pod]) -> dict[CardKey, list[Pod]]:
    usage: dict[CardKey, list[Pod]] = defaultdict(list)
    for pod in sorted(pods, key=lambda p: p.name):
        placement = known(pod.placement, f"the placement of running pod {pod.name}")
        for index in placement.cards:
            usage[(placement.node, index)].append(pod)
    return usage


def compare_modes(modes: dict[CardKey, float], pods: list[Pod], notes: Notes) -> None:
    """CCE's published mode of each card (`gpu_schedule_policy`) against the modelled vGPUs."""
    usage = by_card(pods)
    for (node, index), mode in sorted(modes.items()):
        on_card = usage.get((node, index), [])
        modelled = int(on_card[0].request.mode) if on_card else 2
        if int(mode) != modelled:
            notes.warnings.append(
                f"node {node} card {index}: {CARD_MODE} is {int(mode)}, "
                f"the modelled vGPUs give mode {modelled}"
            )
