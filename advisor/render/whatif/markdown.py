"""`xgpu-advisor whatif --format markdown`: the scenario under each node × card policy, or
each scheduler profile side by side (from `advisor.output.whatif_json` / `schedulers_json`,
typed by `advisor.schemas`; the what-if is rendered from the command's own output only, never
from a file, so it is read as written)."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.core.diagnosis import CAUSES, OPTIONAL_CAUSES
from advisor.core.profiles import named_in_reports
from advisor.schemas import (
    FragmentationSummaryJson,
    PlacementJson,
    SchedulerOutcomeJson,
    SchedulersJson,
    WhatIfJson,
    WhatIfNowJson,
)
from advisor.words import plural

MIB_PER_GIB = 1024
MAX_PLACEMENT_ROWS = 50


def _frag(f: FragmentationSummaryJson) -> str:
    return f"{f['ratio']:.1%} of {f['free_mib'] / MIB_PER_GIB:,.1f} GiB"


def _judged_by(current: WhatIfNowJson) -> str:
    """ "hami: " before the policy, for a profile that reports name (cce's wording stays as
    it was)."""
    profile = current["scheduler"]["profile"]
    return f"{profile}: " if named_in_reports(profile) else ""


def render_whatif_markdown(data: WhatIfJson) -> str:
    """The policies side by side: the Pending queue placed, then every pod placed again."""
    current = data["current"]
    policy = current["policy"]
    relative = current.get("pending_relative", 0)
    asked = f"{current['pending_mib'] / MIB_PER_GIB:,.1f} GiB" + (
        f", and {relative} asking a share or a whole card" if relative else ""
    )
    lines = [
        "# Scheduler policy what-if",
        "",
        f"Now ({_judged_by(current)}{policy['node']} nodes, {policy['card']} cards): "
        f"{current['running']} running, "
        f"{current['pending']} Pending ({asked}); "
        f"fragmentation {_frag(current['fragmentation'])} free.",
        "",
        "## The Pending queue, running pods where they are",
        "",
        "| node policy | card policy | Pending placed | GiB placed | fragmentation after "
        "| stranded after |",
        "|---|---|---|---|---|---|",
    ]
    for p in data["policies"]:
        f = p["fragmentation"]
        lines.append(
            f"| {p['node']} | {p['card']} | {p['pending_placed']} of {current['pending']} "
            f"| {p['pending_placed_mib'] / MIB_PER_GIB:,.1f} | {_frag(f)} "
            f"| {f['stranded_mib'] / MIB_PER_GIB:,.1f} GiB |"
        )
    lines += [
        "",
        "## Every pod placed again from empty (running first, then the queue)",
        "",
        "| node policy | card policy | pods placed | running lost | Pending placed "
        "| fragmentation after |",
        "|---|---|---|---|---|---|",
    ]
    for p in data["policies"]:
        r = p["repack"]
        lines.append(
            f"| {p['node']} | {p['card']} | {r['placed']} of {r['pods']} | {r['running_lost']} "
            f"| {r['pending_placed']} | {_frag(r['fragmentation'])} |"
        )
    lines += ["", *_unhealthy_lines(data)]
    lines += [
        "Fragmentation is FGD's measure (ATC '23): free memory the workload's typical request "
        "shapes cannot use, as a share of all free memory on healthy cards.",
        "",
    ]
    return "\n".join(lines)


# Why a what-if places pods on unhealthy cards, and what to expect of it.
UNHEALTHY_WHY = (
    "Volcano's vGPU filter (checkNodeGPUSharingPredicateAndScore) reads no health, so the "
    "real scheduler places pods there too, and the device plugin may then refuse them: fix "
    "or drain those cards before counting on these placements."
)


def _unhealthy_lines(data: WhatIfJson) -> list[str]:
    """Per policy, the pods placed on unhealthy cards (only volcano-vgpu places any)."""
    notes = []
    for p in data["policies"]:
        queued, repacked = p.get("pending_on_unhealthy", 0), p["repack"].get("on_unhealthy", 0)
        if queued or repacked:
            notes.append(
                f"- {p['node']} / {p['card']}: {plural(queued, 'Pending pod')} placed and "
                f"{plural(repacked, 'pod')} repacked on cards reported unhealthy."
            )
    return [*notes, "", UNHEALTHY_WHY, ""] if notes else []


def _landing(placement: PlacementJson | None, cause: str | None) -> str:
    """ "n1 [0, 1]", or the pod's cause under that profile when it lands nowhere."""
    if placement is None:
        return "not placed" if cause is None else cause
    cards = ", ".join(map(str, placement["cards"]))
    return f"{placement['node']} [{cards}]"


def render_schedulers_markdown(data: SchedulersJson) -> str:
    """The profiles side by side, then the Pending pods whose landing differs between them."""
    entries = data["schedulers"]
    pending = data["pending"]
    header = ["scheduler", "policy (node / card)", "vGPUs per card", "Pending placed", "GiB placed"]
    # the job layer's and MIG's causes get a column only where some profile finds them
    shown = [*CAUSES, *(c for c in OPTIONAL_CAUSES if any(e["pending"].get(c) for e in entries))]
    header += [*shown, "fragmentation after", "stranded after"]
    lines = [
        "# Scheduler what-if",
        "",
        f"The same cluster and queue ({data['running']} running, {pending} Pending) "
        "judged by each scheduler's rules. Pending pods are placed in queue order with the "
        "running pods where they are.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    for e in entries:
        policy, causes, frag = e["policy"], e["pending"], e["fragmentation"]
        cells = [
            e["profile"],
            f"{policy['node']} / {policy['card']}",
            str(e["max_vgpus_per_card"]),
            f"{e['placed']} of {pending}",
            f"{e['placed_mib'] / MIB_PER_GIB:,.1f}",
            *(str(causes.get(cause, 0)) for cause in shown),
            _frag(frag),
            f"{frag['stranded_mib'] / MIB_PER_GIB:,.1f} GiB",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *_differences(entries), *_notes(entries)]
    lines += [
        "Fragmentation is FGD's measure (ATC '23) over each profile's own typical request "
        "shapes; stranded memory is free memory no pod left Pending could use. For one "
        "scheduler's node × card policies, run `whatif --scheduler PROFILE`.",
        "",
    ]
    return "\n".join(lines)


def _differences(entries: Sequence[SchedulerOutcomeJson]) -> list[str]:
    placements = [e["placements"] for e in entries]
    causes = [e["causes"] for e in entries]
    pods = list(placements[0]) if placements else []
    rows = []
    for pod in pods:
        cells = [_landing(p.get(pod), c.get(pod)) for p, c in zip(placements, causes, strict=True)]
        if len(set(cells)) > 1:
            rows.append(f"| {pod} | " + " | ".join(cells) + " |")
    if not rows:
        return ["Every Pending pod lands alike under each profile.", ""]
    names = [e["profile"] for e in entries]
    lines = [
        "## Pending pods that land differently",
        "",
        "| pod | " + " | ".join(names) + " |",
        "|" + "|".join("---" for _ in range(len(names) + 1)) + "|",
        *rows[:MAX_PLACEMENT_ROWS],
        "",
    ]
    if len(rows) > MAX_PLACEMENT_ROWS:
        lines += [f"… and {len(rows) - MAX_PLACEMENT_ROWS} more (see --format json).", ""]
    return lines


def _notes(entries: Sequence[SchedulerOutcomeJson]) -> list[str]:
    notes = []
    for e in entries:
        profile = e["profile"]
        ties, invalid = e["random_ties"], e["running_invalid"]
        if ties:
            notes.append(
                f"- {profile}: {ties} of its picks were among nodes that score the same; the "
                "scheduler picks one at random, the model the first by name, so the real pick "
                "may differ."
            )
        if sick := e.get("on_unhealthy", []):
            notes.append(
                f"- {profile}: {', '.join(sick)} placed on cards reported unhealthy. "
                + UNHEALTHY_WHY
            )
        if invalid:
            notes.append(
                f"- {profile}: running pods asking what this profile cannot express (a whole "
                f"card, a share, a size off its grid): {invalid}. They are counted where they "
                "run, with what the profile makes of their request."
            )
    return [*notes, ""] if notes else []
