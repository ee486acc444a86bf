"""`xgpu-advisor snapshot`: the live state as a scenario file (docs/design.md §4), so that any
finding can be reproduced offline and attached to a ticket. With Kubernetes it holds the rest
of each node too (docs/design.md §9.1): allocatable, labels, taints, cordons, every pod's
effective request and node constraints, and the pods that take room on each GPU node.
`--pods-from` takes what Kubernetes would add from a scenario file instead, as `report` does:
a snapshot of simulated exporters that holds the scenario's Pending pods too."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from advisor.commands.cluster_input import read_cluster
from advisor.commands.flags.scheduler import scheduler_choice
from advisor.errors import InputError
from advisor.words import plural


def run(args: argparse.Namespace) -> int:
    # A file that cannot be written is refused before the live read (and its imports);
    # with a `--pods-from` file, after it: an input's problem is named before the output's.
    if args.pods_from is None:
        _writable(args.output)
    read = read_cluster(args, scheduler_choice(args))
    _writable(args.output)
    # The scenario writer and its reader (the core, PyYAML) only now, once there is a
    # cluster: an unusable input is refused before they load (README "Start-up").
    from advisor.core.times import rfc3339
    from advisor.scenario import ScenarioError, save_scenario, scenario_from_data, scenario_to_data

    cluster, source, scheduler = read.cluster, read.source, read.scheduler
    # The time it was taken: the file's Pending ages stay those of this moment (§12).
    cluster = replace(cluster, now=cluster.now or rfc3339(datetime.now(UTC)))
    try:  # the file must load again; a failure here is a bug in assembling, said plainly
        scenario_from_data(scenario_to_data(cluster), str(args.output))
    except ScenarioError as error:
        raise InputError(f"the live state does not fit the scenario format: {error}") from None
    try:
        save_scenario(args.output, cluster)
    except OSError as error:
        raise InputError(f"{args.output}: cannot write: {error.strerror or error}") from None
    nodes = plural(len(cluster.nodes), "node")
    cards = plural(sum(len(n.cards) for n in cluster.nodes), "card")
    print(
        f"xgpu-advisor: wrote {args.output} from {source}: {nodes}, {cards}, "
        f"{plural(len(cluster.running), 'running pod')} and "
        f"{plural(len(cluster.pending), 'Pending pod')}; "
        f"scheduler {scheduler}",
        file=sys.stderr,
    )
    return 0


def _writable(output: Path) -> None:
    if not output.parent.is_dir():
        raise InputError(f"{output}: cannot write: no folder {output.parent}")
