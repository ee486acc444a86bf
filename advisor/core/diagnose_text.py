"""The words of a diagnosis: per-node details and the figures behind a rejection."""

from __future__ import annotations

from advisor.core.model import Mode
from advisor.core.nodefilters import RESOURCE_REASONS, bytes_text, cpu_text
from advisor.core.rules_cce import CceRules
from advisor.core.state import UNLIMITED, Shape

REASONS = CceRules.reasons  # the texts below are CCE's; other profiles list cards by reason name


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
    reason: str, free: tuple[int | None, int | None, int | None], shape: Shape
) -> str:
    """A NodeResourcesFit reason with the figures behind it; other reasons as they are."""
    if reason not in RESOURCE_REASONS:
        return reason
    column = RESOURCE_REASONS.index(reason)
    left = free[column]
    if left is None or left >= UNLIMITED:
        return reason
    if column == 0:
        return f"{reason}: no pod slot left"
    show = cpu_text if column == 1 else bytes_text
    want = shape.demand[column]
    return f"{reason}: {show(max(left, 0))} free, pod needs {show(want)}"


def card_reason_text(code: int, cards: list[int], shape: Shape, limit: int) -> str:
    listed = ", ".join(map(str, cards))
    noun = "card" if len(cards) == 1 else "cards"
    verb = "has" if len(cards) == 1 else "have"
    wanted = "memory+core" if shape.mode == int(Mode.MEMORY_CORE) else "memory"
    other = "memory" if shape.mode == int(Mode.MEMORY_CORE) else "memory+core"
    text = {
        1: f"{noun} {listed} {'is' if len(cards) == 1 else 'are'} unhealthy",
        2: f"{noun} {listed} host {other} isolation vGPUs, pod needs {wanted} isolation",
        3: f"{noun} {listed} {verb} {limit} vGPUs (the limit)",
        4: f"{noun} {listed} {verb} less than {shape.card_memory_mib} MiB free",
        5: f"{noun} {listed} {verb} less than {shape.card_core}% core free",
    }[code]
    return f"{REASONS[code]}: {text}"
