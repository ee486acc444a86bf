"""`xgpu-advisor whatif`: the scenario under each node × card policy (binpack, spread), or
with `--scheduler cce,hami,volcano-vgpu` under each scheduler profile side by side."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from advisor.commands import emit
from advisor.commands.cluster_input import read_cluster
from advisor.commands.flags.scheduler import scheduler_choices

# The model (the core, the output, the renderers) loads once the cluster is read, so that a
# missing or unreadable input is refused at once (README "Start-up").
if TYPE_CHECKING:
    from advisor.core.model import Policy, ProfileName


def policies_of(profile: ProfileName) -> tuple[Policy, ...]:
    """Every node × card policy the profile knows (volcano-vgpu's legacy walk included)."""
    from advisor.core.model import Policy
    from advisor.scenario.profile import NODE_POLICIES, defaults

    return tuple(Policy(n, c) for n in NODE_POLICIES for c in defaults(profile)[1])


def run(args: argparse.Namespace) -> int:
    chosen = scheduler_choices(args) or ()
    # several profiles: the cluster as the file or the sources say, then re-judged per profile
    cluster = read_cluster(args, chosen[0] if len(chosen) == 1 else None).cluster
    from advisor.core.whatif import as_held, profile_outcome, what_if
    from advisor.output import schedulers_json, whatif_json
    from advisor.render.whatif import render_schedulers_markdown, render_whatif_markdown
    from advisor.scenario.profile import retarget

    if len(chosen) > 1:
        held = as_held(cluster)  # running pods take what they hold under any other profile
        outcomes = [
            profile_outcome(cluster if p == cluster.scheduler.profile else retarget(held, p))
            for p in chosen
        ]
        side_by_side = schedulers_json(outcomes, running=len(cluster.running))
        text = (
            json.dumps(side_by_side, indent=2)
            if args.format == "json"
            else render_schedulers_markdown(side_by_side)
        )
    else:
        data = whatif_json(what_if(cluster, policies_of(cluster.scheduler.profile)))
        text = json.dumps(data, indent=2) if args.format == "json" else render_whatif_markdown(data)
    emit(text, args.output)
    return 0
