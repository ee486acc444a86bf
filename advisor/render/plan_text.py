"""Sentences about the plan search, shared by the Markdown and HTML pages: the caps the
plans were held to, the plans above a cap (with the flag to raise), how far the search
looked when it found nothing, and why it stopped when it stopped early (docs/design.md §8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render._common import as_int, as_list, as_map, as_str, plural

MAX_HELD_BACK_LISTED = 10  # one sentence each; the JSON's `held_back` has them all


def _number(value: Any) -> str:
    return f"{as_int(value):,}"


def cost_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else "?"


def caps_line(data: Mapping[str, Any]) -> str | None:
    """What every plan was held to (None for a JSON without it)."""
    limits = as_map(data.get("limits"))
    if not limits:
        return None
    never = [as_str(n, "?") for n in as_list(limits.get("never_evict"))]
    text = (
        f"Caps: at most {plural(as_int(limits.get('max_plan_evictions')), 'eviction')} per "
        f"plan (--max-plan-evictions) and {as_str(limits.get('max_evictions'), '?')} for all "
        "plans together (--max-evictions)"
    )
    if never:
        text += f"; never evicted besides the usual protections: {', '.join(never)}"
    return text + "."


def held_back_lines(data: Mapping[str, Any]) -> list[str]:
    """One sentence per plan that exists but is above a cap, with the value that would let
    it through (the first MAX_HELD_BACK_LISTED, then how many more)."""
    entries = [as_map(h) for h in as_list(data.get("held_back"))]
    lines = []
    for entry in entries[:MAX_HELD_BACK_LISTED]:
        rescues = ", ".join(as_str(n, "?") for n in as_list(entry.get("rescues")))
        flag, limit = as_str(entry.get("flag"), "?"), as_str(entry.get("limit"), "?")
        evictions = plural(as_int(entry.get("evictions")), "eviction")
        alike = as_int(entry.get("waiting"), 1) - 1
        more = f"; {alike} more Pending of its shape" if alike > 0 else ""
        lines.append(
            f"1 plan rescues {rescues} with {evictions}, above {flag} {limit} (cost "
            f"{cost_text(entry.get('cost'))}{more}): {flag} {as_str(entry.get('needs'), '?')} "
            "would allow it."
        )
    if len(entries) > MAX_HELD_BACK_LISTED:
        left = len(entries) - MAX_HELD_BACK_LISTED
        lines.append(f"And {plural(left, 'more plan')} above a cap (the JSON lists them all).")
    return lines


def no_plan_text(data: Mapping[str, Any]) -> str:
    """Why the plans section is empty: caps, or how far the search looked and found nothing."""
    s = as_map(data.get("summary"))
    if as_list(data.get("held_back")):
        return "No plan within the caps; plans above them exist:"
    return (
        f"No plan found: the search checked {_number(s.get('cards_checked'))} cards for pods "
        f"to move, looked at {_number(s.get('targets'))} targets (cards or nodes to free for a "
        f"Pending pod) and simulated {_number(s.get('simulations'))}; in none does a Pending "
        "pod run with every evicted pod landing again."
    )


def stop_line(data: Mapping[str, Any]) -> str | None:
    """Why the search stopped early, when it did."""
    s = as_map(data.get("summary"))
    stopped = s.get("stopped_by")
    if stopped == "work":
        return (
            f"The search stopped at its work budget ({_number(s.get('work_budget'))} simulated "
            "placements, --plan-work): more plans may exist."
        )
    if stopped == "time" or (stopped is None and s.get("budget_exhausted")):
        return (
            f"The time safety stop fired after {s.get('time_budget_seconds')} s "
            f"(--time-budget), with {_number(s.get('work'))} of "
            f"{_number(s.get('work_budget'))} simulated placements done: what was found "
            "depends on this machine's speed, and more may exist."
        )
    return None
