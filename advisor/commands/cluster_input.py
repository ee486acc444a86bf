"""Where a command's cluster comes from, for every command that reads one (diagnose, plan,
whatif, report, snapshot): a scenario file (`--scenario`) or the live sources
(`--prometheus` or `--exporters`, with `--kubernetes`), and `--pods-from`. One definition of
the flags, one check that exactly one source is given, one reading: so a cluster read live
is the cluster its snapshot holds, whichever command reads it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from advisor.commands.flags.scenario import scenario_limits
from advisor.commands.flags.sources import (
    refuse_exporters_flags,
    refuse_prometheus_flags,
    source_config,
)
from advisor.errors import InputError
from advisor.flagparse import given_flags
from advisor.scenario.text import read_scenario_text
from advisor.terminal import one_line

# The model (the core, numpy, the scenario reader) loads once the input is read, so that a
# missing or unreadable file is refused at once (README "Start-up"); the sources and their
# libraries only for a live read.
if TYPE_CHECKING:
    from advisor.core.model import Cluster, ProfileName
    from advisor.sources import Gathered
    from advisor.sources.gather import SourceConfig
    from advisor.sources.values import Stale

# Live-only flags with no default, which a scenario file would silently leave unused.
LIVE_ONLY = (
    ("--kubernetes", "kubernetes"),
    ("--kubeconfig", "kubeconfig"),
    ("--node-policy", "node_policy"),
    ("--card-policy", "card_policy"),
    ("--max-vgpus-per-card", "max_vgpus_per_card"),
)

# Live-source flags with a default (each source's own are refused by `flags.sources`), and the
# scenario's limits: given beside the other kind
# of input they would change nothing, so they are refused by name (SuggestingParser records
# which flags were written).
LIVE_TUNING = ("--stale-after", "--source-timeout")
SCENARIO_ONLY = (
    "--scenario.max-bytes",
    "--scenario.max-nodes",
    "--scenario.max-cards",
    "--scenario.max-pods",
)


@dataclass(frozen=True, slots=True)
class ClusterInput:
    """The cluster a command reads, and what it was read from."""

    cluster: Cluster
    source: str  # "scenario FILE", or "prometheus URL + kubernetes HOST"; "+ pods from FILE"
    title: str  # for page titles: the scenario file's name, or `source`
    scheduler: str  # the profile and why: "hami (auto: ... on 3 pods)"
    warnings: tuple[str, ...] = ()  # the live sources' notes, printed already
    stale: tuple[Stale, ...] = ()
    config: SourceConfig | None = None  # the live sources' settings; None for a scenario


def read_cluster(args: argparse.Namespace, scheduler: ProfileName | None) -> ClusterInput:
    """`read_input` in an event loop of its own."""
    return asyncio.run(read_input(args, scheduler))


async def read_input(args: argparse.Namespace, scheduler: ProfileName | None) -> ClusterInput:
    """The cluster the flags name, judged by `scheduler` (None: the file's own, or what the
    live sources show); the live sources' warnings and stale series printed on stderr.
    InputError (exit 2) unless exactly one source is given."""
    live = args.prometheus is not None or args.exporters is not None
    if (args.scenario is not None) == live:
        raise InputError("give exactly one source: --scenario, --prometheus or --exporters")
    refuse_exporters_flags(args)
    if args.scenario is not None:
        refuse_prometheus_flags(args)  # which a scenario never uses
        given = given_flags(args)
        for flag, dest in LIVE_ONLY:
            if getattr(args, dest) not in (None, False) or flag in given:
                raise InputError(f"{flag} applies to --prometheus or --exporters only")
        _refuse(given, LIVE_TUNING, "applies to --prometheus or --exporters only")
        limits = scenario_limits(args)
        text = read_scenario_text(args.scenario, limits.max_bytes)
        from advisor.scenario import scenario_from_text  # the model, now that there is input

        cluster = scenario_from_text(text, args.scenario, scheduler, limits)
        source = f"scenario {args.scenario}"
        read = ClusterInput(cluster, source, args.scenario.name, cluster.scheduler.profile)
    else:
        _refuse(given_flags(args), SCENARIO_ONLY, "applies to --scenario only")
        read = await _live(args, scheduler)
    read = _with_pods_from(read, args.pods_from, auto=scheduler is None)
    from advisor.core.jobs import not_modelled, without_allocate
    from advisor.core.profiles import profile_of

    session = profile_of(read.cluster.scheduler).session  # what its cycle judges (core.gang)
    unmodelled = not_modelled(
        read.cluster.jobs, session.volcano, session.volcano, session.device_quota
    )
    if unmodelled:  # until the job layer decides (docs/design.md §10.2), never silently
        print(
            "xgpu-advisor: warning: jobs read but not yet modelled: "
            f"{'; '.join(unmodelled)} (verdicts leave them out)",
            file=sys.stderr,
        )
    actions = read.cluster.scheduler.actions
    unallocated = session.volcano and without_allocate(
        session.default_actions if actions is None else actions
    )
    if unallocated:  # a configuration the cycle does not follow (docs/design.md §10.2)
        print(f"xgpu-advisor: warning: {unallocated}", file=sys.stderr)
    return read


def _refuse(given: frozenset[str], flags: tuple[str, ...], why: str) -> None:
    for flag in flags:
        if flag in given:
            raise InputError(f"{flag} {why}")


async def _live(args: argparse.Namespace, scheduler: ProfileName | None) -> ClusterInput:
    # The profile travels in the source config: gathering settles it (auto: from the
    # cluster's own annotations) before the cluster is assembled.
    config = source_config(args, scheduler)  # credential files are read here, once
    from advisor.sources import gather

    gathered = await gather(config)
    if args.pods_from is not None:
        from advisor.commands.pods_from import without_kubernetes_warning

        gathered = without_kubernetes_warning(gathered, args.pods_from)
    print_notes(gathered)
    return ClusterInput(
        gathered.cluster,
        gathered.source,
        gathered.source,
        gathered.scheduler,
        gathered.warnings,
        gathered.stale,
        config,
    )


def _with_pods_from(read: ClusterInput, path: Path | None, *, auto: bool) -> ClusterInput:
    if path is None:
        return read
    from advisor.commands.pods_from import with_pods_from

    cluster = with_pods_from(read.cluster, path, auto)
    source = f"{read.source} + pods from {path}"
    scheduler = f"{cluster.scheduler.profile} (auto: from {path})" if auto else read.scheduler
    title = source if read.config is not None else read.title
    return replace(read, cluster=cluster, source=source, title=title, scheduler=scheduler)


def print_notes(gathered: Gathered, stream: TextIO | None = None) -> None:
    """Warnings and stale series, one line each, for stderr."""
    out = sys.stderr if stream is None else stream
    for warning in gathered.warnings:
        print(f"xgpu-advisor: warning: {one_line(warning)}", file=out)
    for stale in gathered.stale:
        print(f"xgpu-advisor: stale, left out: {one_line(stale)}", file=out)
