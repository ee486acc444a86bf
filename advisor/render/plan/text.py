"""Sentences about the plan search, shared by the Markdown and HTML pages: the unit of its
figures and the bounds that frame them, the caps the
plans were held to, the plans above a cap (with the flag to raise), how far the search
looked when it found nothing, and why it stopped when it stopped early (docs/design.md §8)."""

from __future__ import annotations

from advisor.schemas import HeldBackJson, PlanJson
from advisor.words import plural

MAX_HELD_BACK_LISTED = 10  # one sentence each; the JSON's `held_back` has them all


def cost_text(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def unit_text(data: PlanJson) -> str:
    """What one GPU is in every figure of the plan (docs/design.md §8: GPUs of memory)."""
    reference = data["summary"].get("reference_card_mib")
    size = f"{reference:,} MiB, " if reference else ""
    return (
        f"GPUs are GPUs of memory: 1 GPU = {size}the memory of the commonest card; a pod "
        "asking a share or a whole card counts what it would take of such a card."
    )


def ideal_text(data: PlanJson) -> str:
    """The two bounds that frame the plans, in the plans' unit."""
    ideal = data["ideal"]
    return (
        f"Ideal: the best arrangement found that keeps every running pod ({ideal['method']}) "
        f"places {ideal['repack_gpus']} GPUs ({ideal['repack_share'] or 0.0:.1%}) of the "
        f"Pending demand; memory bounds any at {ideal['upper_bound_gpus']} GPUs "
        f"({ideal['upper_bound_share'] or 0.0:.1%}): the cards' memory less the least "
        "the running pods can hold."
    )


def caps_line(data: PlanJson) -> str | None:
    """What every plan was held to (None for a JSON without it)."""
    limits = data.get("limits")
    if limits is None:
        return None
    never = limits["never_evict"]
    text = (
        f"Caps: at most {plural(limits['max_plan_evictions'], 'eviction')} per "
        f"plan (--max-plan-evictions) and {limits['max_evictions']} for all "
        "plans together (--max-evictions)"
    )
    if never:
        text += f"; never evicted besides the usual protections: {', '.join(never)}"
    return text + "."


def held_back_lines(data: PlanJson) -> list[str]:
    """One sentence per plan that exists but is above a cap, with the value that would let
    it through (the first MAX_HELD_BACK_LISTED, then how many more)."""
    entries = data["held_back"]
    lines = []
    for entry in entries[:MAX_HELD_BACK_LISTED]:
        lines.append(held_back_text(entry))
    if len(entries) > MAX_HELD_BACK_LISTED:
        left = len(entries) - MAX_HELD_BACK_LISTED
        lines.append(f"And {plural(left, 'more plan')} above a cap (the JSON lists them all).")
    return lines


def held_back_text(entry: HeldBackJson) -> str:
    """One plan above a cap, with the value that would let it through."""
    rescues = ", ".join(entry["rescues"])
    flag, limit = entry["flag"], entry["limit"]
    evictions = plural(entry["evictions"], "eviction")
    alike = entry["waiting"] - 1
    more = f"; {alike} more Pending of its shape" if alike > 0 else ""
    return (
        f"1 plan rescues {rescues} with {evictions}, above {flag} {limit} (cost "
        f"{cost_text(entry['cost'])}{more}): {flag} {entry['needs']} would allow it."
    )


def no_plan_text(data: PlanJson) -> str:
    """Why the plans section is empty: caps, or how far the search looked and found nothing."""
    s = data["summary"]
    if data["held_back"]:
        return "No plan within the caps; plans above them exist:"
    return (
        f"No plan found: the search checked {s.get('cards_checked', 0):,} cards for pods "
        f"to move, looked at {s.get('targets', 0):,} targets (cards or nodes to free for a "
        f"Pending pod) and simulated {s.get('simulations', 0):,}; in none does a Pending "
        "pod run with every evicted pod landing again."
    )


def stop_line(data: PlanJson) -> str | None:
    """Why the search stopped early, when it did."""
    s = data["summary"]
    stopped = s.get("stopped_by")
    if stopped == "work":
        return (
            f"The search stopped at its work budget ({s.get('work_budget', 0):,} simulated "
            "placements, --plan-work): more plans may exist."
        )
    if stopped == "time" or (stopped is None and s["budget_exhausted"]):
        return (
            f"The time safety stop fired after {s['time_budget_seconds']} s "
            f"(--time-budget), with {s.get('work', 0):,} of "
            f"{s.get('work_budget', 0):,} simulated placements done: no further run of "
            "the search started, so what was found depends on this machine's speed, and "
            "more may exist."
        )
    return None
