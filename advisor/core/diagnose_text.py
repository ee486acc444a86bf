"""The words of a diagnosis: per-node details and the figures behind a rejection."""

from __future__ import annotations

from advisor.core.nodefilters import RESOURCE_REASONS, bytes_text, cpu_text
from advisor.core.state import UNLIMITED, BoolArray, CardState, IntArray, Shape


def per_card_text(shape: Shape) -> str:
    if shape.card_memory_mib > 0 and shape.memory_percent == 0:
        return f"{shape.card_memory_mib} MiB"
    if shape.memory_percent > 0:
        return f"{shape.memory_percent}% of the card"
    return "the whole card"


def resources_text(shape: Shape) -> str:
    r = shape.resources
    return f"cpu {cpu_text(r.cpu_milli)}, memory {bytes_text(r.memory_bytes)}"


def resource_detail(
    reason: str,
    free: tuple[int | None, int | None, int | None],
    shape: Shape,
    reasons: tuple[str, ...] = RESOURCE_REASONS,
) -> str:
    """A resource check's reason (`reasons`: its words per column) with the figures behind
    it; other reasons as they are."""
    if reason not in reasons:
        return reason
    column = reasons.index(reason)
    left = free[column]
    if left is None or left >= UNLIMITED:
        return reason
    if column == 0:
        return f"{reason}: no pod slot left"
    show = cpu_text if column == 1 else bytes_text
    want = shape.demand[column]
    if left < 0:  # its pods request more than it has: Volcano refuses even a zero request
        return f"{reason}: overcommitted by {show(-left)}, pod needs {show(want)}"
    return f"{reason}: {show(left)} free, pod needs {show(want)}"


def node_details(
    s: CardState,
    node: int,
    reasons: tuple[str, ...],
    counts: IntArray,
    codes: IntArray,
    shape: Shape,
    checks: int,
) -> tuple[str, ...]:
    """A node's reason lines: the first filter's, with its figures, or the GPU reason and
    each card check (`checks` of them) that refuses some of its cards, most cards first:
    read off the verdicts (`codes`: per card, the first check that rejected it)."""
    names = s.profile.reasons
    positions = s.node_positions(node)
    if reasons[0] not in names:  # rejected before the GPU filter
        free = s.free_resources(node)
        return tuple(resource_detail(r, free, shape, s.fit.reasons) for r in reasons)
    if s.card_count[node] < shape.gpus:
        few = names[s.profile.few_cards_reason]
        has = int(s.card_count[node])
        word = "card" if has == 1 else "cards"  # the core may not import render's plural
        return (f"{few}: node has {has} {word}, {shape.gpus} needed",)
    lines = []
    if reasons[0] == names[0]:
        of = "card" if shape.gpus == 1 else "cards"
        lines.append(f"{names[0]}: {int(counts[0])} of {shape.gpus} {of} eligible")
    elif reasons[0] in {names[c] for c in s.profile.refused_reasons}:
        code = names.index(reasons[0])
        lines.append(s.profile.card_reason_text(code, [], shape, s.limit))
    for code in sorted(range(1, 1 + checks), key=lambda c: (-int(counts[c]), c)):
        if counts[code] == 0:
            continue
        cards = [int(s.card_index[k]) for k in positions if codes[k] == code]
        lines.append(s.profile.card_reason_text(code, cards, shape, s.limit))
    return tuple(lines)


def deciding(
    state: CardState,
    node: int,
    shape: Shape,
    pool: BoolArray,
    codes: IntArray,
    primary: IntArray,
    lines: tuple[str, ...],
) -> str:
    """What refuses a fragmentation pod on the node that has the room, from the same
    card verdicts its node reasons list (`lines`): a refusal of the cards together
    (HAMi's NumaNotFit), else the checks other than free memory that refuse its cards
    (timeslicing slots, mode, core), else the memory split across them."""
    profile = state.profile
    names = profile.reasons
    split = f"not {per_card_text(shape)} on each of {shape.gpus} eligible cards"
    if int(primary[node]) in profile.refused_reasons:
        refused = f"{names[int(primary[node])]}:"
        return next((line for line in lines if line.startswith(refused)), split)
    at = [k for k in state.node_positions(node) if pool[k]]
    found = {int(codes[k]) for k in at} - {0, profile.memory_reason}
    if not found:
        return split
    shown = {names[c] for c in (*found, profile.memory_reason)}
    return "; ".join(line for line in lines if line.split(":", 1)[0] in shown)
