"""What would make room for an autoscaler's replicas that do not fit (docs/design.md §12.2),
in sentences the pages share: each replica's advice (the words a Pending pod's advice has
everywhere, `core.remedy.ACTIONS`), then the plans, held-back plans, nodes and relief of the
run with them Pending, in the plan's own words."""

from __future__ import annotations

from advisor.core.remedy import ACTIONS
from advisor.render.plan.scaling import scale_up_row
from advisor.render.plan.text import held_back_text
from advisor.schemas import ReplicaRemedyJson
from advisor.words import plural

# The lead of the sentences under a blocked autoscaler, on the Markdown and HTML pages alike.
ROOM_LEAD = "What would make room for the replicas left Pending, as for Pending pods:"


def room_lines(room: ReplicaRemedyJson) -> list[str]:
    """One sentence per advice (the replicas it is given to), plan, held-back plan, scale-up
    step, pod no node would help, and relief."""
    if not room["replicas"]:
        return ["With every blocked autoscaler's replicas added together, these all place."]
    by_key: dict[str, list[str]] = {}
    for entry in room["replicas"]:
        key = entry["advice"]["key"] if "advice" in entry else entry["cause"]
        by_key.setdefault(key, []).append(entry["pod"])
    lines = []
    for key, pods in by_key.items():
        title = ACTIONS[key][0] if key in ACTIONS else key
        lines.append(f"{title}: {', '.join(pods)}.")
    for p in room["plans"]:
        evict = ", ".join(p["evict"])
        lines.append(
            f"A plan evicting {evict} ({plural(p['evictions'], 'eviction')}) rescues "
            f"{', '.join(p['rescues'])}."
        )
    lines += [held_back_text(h) for h in room["held_back"]]
    for step in room["scale_up"]:
        row = scale_up_row(step)
        note = f" ({row.note})" if row.note else ""
        nodes = plural(step["nodes"], "node")
        lines.append(f"Scale up: {nodes} of {row.shape}, for {', '.join(row.pods)}{note}.")
    helpless = room["scale_up_not_triggered"]
    lines += [f"No new node helps {n['pod']}: {n['reason']}." for n in helpless]
    lines += [f"{r['pod']}: {r['advice']}" for r in room["relief"]]
    return lines
