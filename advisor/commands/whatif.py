"""`xgpu-advisor whatif`: the scenario under each node × card policy (binpack, spread), or
with `--scheduler cce,hami,volcano-vgpu` under each scheduler profile side by side."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from advisor.commands import add_output, add_scheduler_argument, emit, scheduler_choices
from advisor.core.diagnose import CAUSES
from advisor.core.model import Policy, ProfileName
from advisor.core.whatif import as_held, profile_outcome, what_if
from advisor.output import schedulers_json, whatif_json
from advisor.render._common import as_int, as_list, as_map, as_str
from advisor.scenario import load_scenario
from advisor.scenario_profile import DEFAULTS, NODE_POLICIES, retarget

GIB = 1024
MAX_PLACEMENT_ROWS = 50


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "whatif", help="Pending pods placed and fragmentation under each scheduler policy"
    )
    parser.add_argument("--scenario", required=True, type=Path, help="scenario file (YAML or JSON)")
    add_scheduler_argument(parser, several=True)
    add_output(parser, ("markdown", "json"))
    parser.set_defaults(func=run)


def policies_of(profile: ProfileName) -> tuple[Policy, ...]:
    """Every node × card policy the profile knows (volcano-vgpu's legacy walk included)."""
    return tuple(Policy(n, c) for n in NODE_POLICIES for c in DEFAULTS[profile][1])


def _frag(f: Mapping[str, Any]) -> str:
    return f"{f['ratio']:.1%} of {f['free_mib'] / GIB:,.1f} GiB"


def _judged_by(current: Mapping[str, Any]) -> str:
    """ "hami: " before the policy, for any profile but cce (whose wording stays as it was)."""
    profile = as_str(as_map(current.get("scheduler")).get("profile"), "cce")
    return "" if profile == "cce" else f"{profile}: "


def markdown(data: dict[str, Any]) -> str:
    current = data["current"]
    policy = current["policy"]
    relative = as_int(current.get("pending_relative"))
    asked = f"{current['pending_mib'] / GIB:,.1f} GiB" + (
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
            f"| {p['pending_placed_mib'] / GIB:,.1f} | {_frag(f)} "
            f"| {f['stranded_mib'] / GIB:,.1f} GiB |"
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
    lines += [
        "",
        "Fragmentation is FGD's measure (ATC '23): free memory the workload's typical request "
        "shapes cannot use, as a share of all free memory on healthy cards.",
        "",
    ]
    return "\n".join(lines)


def _landing(placement: Any, cause: Any) -> str:
    """ "n1 [0, 1]", or the pod's cause under that profile when it lands nowhere."""
    where = as_map(placement)
    if not where:
        return as_str(cause, "not placed")
    cards = ", ".join(str(as_int(c)) for c in as_list(where.get("cards")))
    return f"{as_str(where.get('node'), '?')} [{cards}]"


def schedulers_markdown(data: Mapping[str, Any]) -> str:
    """The profiles side by side, then the Pending pods whose landing differs between them."""
    entries = [as_map(e) for e in as_list(data.get("schedulers"))]
    pending = as_int(data.get("pending"))
    header = ["scheduler", "policy (node / card)", "vGPUs per card", "Pending placed", "GiB placed"]
    header += [*CAUSES, "fragmentation after", "stranded after"]
    lines = [
        "# Scheduler what-if",
        "",
        f"The same cluster and queue ({as_int(data.get('running'))} running, {pending} Pending) "
        "judged by each scheduler's rules. Pending pods are placed in queue order with the "
        "running pods where they are.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    for e in entries:
        policy, causes, frag = as_map(e.get("policy")), as_map(e.get("pending")), e["fragmentation"]
        cells = [
            as_str(e.get("profile")),
            f"{as_str(policy.get('node'))} / {as_str(policy.get('card'))}",
            str(as_int(e.get("max_vgpus_per_card"))),
            f"{as_int(e.get('placed'))} of {pending}",
            f"{as_int(e.get('placed_mib')) / GIB:,.1f}",
            *(str(as_int(causes.get(cause))) for cause in CAUSES),
            _frag(frag),
            f"{frag['stranded_mib'] / GIB:,.1f} GiB",
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


def _differences(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    placements = [as_map(e.get("placements")) for e in entries]
    causes = [as_map(e.get("causes")) for e in entries]
    pods = list(placements[0]) if placements else []
    rows = []
    for pod in pods:
        cells = [_landing(p.get(pod), c.get(pod)) for p, c in zip(placements, causes, strict=True)]
        if len(set(cells)) > 1:
            rows.append(f"| {pod} | " + " | ".join(cells) + " |")
    if not rows:
        return ["Every Pending pod lands alike under each profile.", ""]
    names = [as_str(e.get("profile")) for e in entries]
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


def _notes(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    notes = []
    for e in entries:
        profile = as_str(e.get("profile"))
        ties, invalid = as_int(e.get("random_ties")), as_int(e.get("running_invalid"))
        if ties:
            notes.append(
                f"- {profile}: {ties} of its picks were among nodes that score the same; the "
                "scheduler picks one at random, the model the first by name, so the real pick "
                "may differ."
            )
        if invalid:
            notes.append(
                f"- {profile}: running pods asking what this profile cannot express (a whole "
                f"card, a share, a size off its grid): {invalid}. They are counted where they "
                "run, with what the profile makes of their request."
            )
    return [*notes, ""] if notes else []


def run(args: argparse.Namespace) -> int:
    chosen = scheduler_choices(args)
    if chosen is not None and len(chosen) > 1:
        cluster = load_scenario(args.scenario)  # as the file says, then re-judged per profile
        held = as_held(cluster)  # running pods take what they hold under any other profile
        outcomes = [
            profile_outcome(cluster if p == cluster.scheduler.profile else retarget(held, p))
            for p in chosen
        ]
        data = schedulers_json(outcomes, running=len(cluster.running))
        text = json.dumps(data, indent=2) if args.format == "json" else schedulers_markdown(data)
    else:
        cluster = load_scenario(args.scenario, scheduler=chosen[0] if chosen else None)
        data = whatif_json(what_if(cluster, policies_of(cluster.scheduler.profile)))
        text = json.dumps(data, indent=2) if args.format == "json" else markdown(data)
    emit(text, args.output)
    return 0
