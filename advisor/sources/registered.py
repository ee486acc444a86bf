"""A node's cards as its scheduler registered them (advisor.podspec.registration), joined to
the cards the exporter reports.

The scheduler places pods by its registration, so that decides: slots (`Card.max_vgpus`),
memory, NUMA and health. A registered card is matched to the exporter's by UUID, else by
index when the exporter gives no UUID; the exporter keeps the card's index and model. A card
only the registration lists is modelled from it (the exporter reports no vGPU there); one the
registration leaves out is one the scheduler never uses, so it is left out. A registration
that does not read, or that cannot be matched, is warned about and the exporter's cards stand.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.core.model import Card, ProfileName
from advisor.podspec.registration import RegisteredCard, parse_registration, registration_of
from advisor.sources.notes import Notes, names
from advisor.sources.values import KubeNode
from advisor.words import noun_for

TOTAL_CORE = 100  # the model's cores per card; HAMi registers 100 x its core scaling


def registered_cards(
    node: str,
    cards: list[Card],
    kube_node: KubeNode | None,
    profile: ProfileName,
    notes: Notes,
) -> list[Card]:
    """The node's cards as the profile's scheduler sees them; `cards` when it registers none."""
    key = registration_of(profile)
    value = kube_node.registrations.get(key) if kube_node is not None and key else None
    if key is None or value is None:
        return cards
    try:
        registered = parse_registration(profile, value)
        joined, notices = _join(cards, registered)
    except ValueError as error:
        notes.warnings.append(
            f"node {node}: annotation {key}: {error}; cards as the exporter reports them"
        )
        return cards
    notes.warnings.extend(f"node {node}: {notice}" for notice in notices)
    return joined


def _join(
    cards: Sequence[Card], registered: Sequence[RegisteredCard]
) -> tuple[list[Card], list[str]]:
    by_uuid = {c.uuid: c for c in cards if c.uuid}
    by_index = {c.index: c for c in cards}
    # The registration's own indices, when they tell cards apart; else the place in the list.
    given = [r.index for r in registered]
    distinct = None not in given and len(set(given)) == len(given)
    joined: list[Card] = []
    only_registered: list[str] = []
    for position, reg in enumerate(registered):
        index = reg.index if distinct and reg.index is not None else position
        seen = by_uuid.get(reg.uuid)
        if seen is None and index in by_index and not by_index[index].uuid:
            seen = by_index[index]
        if seen is None:
            if index in by_index:
                raise ValueError(
                    f"card {reg.uuid} (index {index}) is not the card the exporter reports "
                    f"there ({by_index[index].uuid})"
                )
            only_registered.append(f"{index} ({reg.uuid})")
        joined.append(
            Card(
                index=seen.index if seen is not None else index,
                memory_mib=reg.memory_mib,
                model=(seen.model if seen is not None else "") or reg.model,
                healthy=reg.healthy,
                uuid=reg.uuid,
                numa=reg.numa,
                max_vgpus=reg.slots,
                mig=seen.mig if seen is not None else None,  # the exporter's (design §13)
            )
        )
    indices = [c.index for c in joined]
    if len(set(indices)) < len(indices):
        raise ValueError("two registered cards match one card of the exporter")
    notices: list[str] = []
    unseen = sorted(set(by_index) - set(indices))
    if unseen:
        listed = names(f"{i} ({by_index[i].uuid or 'no UUID'})" for i in unseen)
        notices.append(
            f"{noun_for(len(unseen), 'card')} {listed} not registered to the scheduler, "
            "which never uses them; left out"
        )
    if only_registered:
        notices.append(
            f"{noun_for(len(only_registered), 'card')} {names(only_registered)} registered but "
            "not reported by the exporter: "
            "modelled from the registration, with no vGPU known on them"
        )
    mig = [f"{c.index} ({r.uuid})" for c, r in zip(joined, registered, strict=True) if r.mig]
    if mig:
        notices.append(
            f"{noun_for(len(mig), 'card')} {names(mig)} registered in the scheduler's MIG mode "
            "(`mig`), whose bind-time geometry the advisor does not model: judged as vGPU "
            "cards (docs/design.md §13.1)"
        )
    scaled = sorted({r.cores for r in registered if r.cores not in (None, TOTAL_CORE)}, key=str)
    if scaled:
        notices.append(
            f"cards register {', '.join(map(str, scaled))}% cores (core scaling); the model "
            f"holds {TOTAL_CORE}% per card"
        )
    return sorted(joined, key=lambda c: c.index), notices
