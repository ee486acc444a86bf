"""`xgpu-advisor report`: the cron job. Gather, diagnose, plan, advise; write JSON, Markdown
and HTML to a directory, the advisor's own series to a textfile and/or a Pushgateway.

Exit codes: 0 done, 2 source or input error, 1 when `--fail-on` findings reach the threshold.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
import urllib.error
from pathlib import Path
from typing import Any

import pandas as pd

from advisor.commands import scheduler_choice
from advisor.commands.flag_types import positive_duration, positive_seconds
from advisor.commands.options import add_source_arguments, source_config
from advisor.commands.snapshot import print_notes
from advisor.core.diagnose import CAUSES
from advisor.core.model import Card, Cluster
from advisor.durations import parse_duration
from advisor.errors import InputError
from advisor.metrics import push, write_textfile
from advisor.render._common import plural
from advisor.report import Report, ReportInputs, ReportOptions, build_report
from advisor.scenario import load_scenario, write_atomic
from advisor.sources import gather
from advisor.sources.history import usage_history

EXIT_FINDINGS = 1
REPORT_FILES = ("report.json", "report.md", "report.html")


def duration(text: str) -> float:
    """Prometheus durations (advisor.durations): 90s, 15m, 1h30m, 24h, 7d; 0 turns a feature
    off."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def causes(text: str) -> frozenset[str]:
    chosen = frozenset(c.strip() for c in text.split(",") if c.strip())
    unknown = sorted(chosen - set(CAUSES))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown cause {', '.join(unknown) or '(none)'}; known: {', '.join(CAUSES)}"
        )
    return chosen


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "report", help="gather, diagnose, plan and advise; write reports and metrics (cron)"
    )
    parser.add_argument("--scenario", type=Path, help="read the cluster from a scenario file")
    add_source_arguments(parser, required=False)
    parser.add_argument(
        "--pods-from",
        type=Path,
        metavar="FILE",
        help="Pending pods, and owners and priorities of running ones, from this scenario "
        "file instead of the Kubernetes API (hosts without Kubernetes, demos)",
    )
    parser.add_argument("--output-dir", required=True, type=Path, help="where the reports go")
    parser.add_argument("--textfile", type=Path, help="write the advisor's series here")
    parser.add_argument("--pushgateway", metavar="URL", help="push the advisor's series here")
    parser.add_argument(
        "--history",
        type=duration,
        default=duration("24h"),
        metavar="WINDOW",
        help="usage history for right-sizing and the usage chart (Prometheus only; 0: off)",
    )
    parser.add_argument(
        "--history-step", type=positive_duration, default=duration("5m"), metavar="STEP"
    )
    parser.add_argument(
        "--time-budget",
        type=positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="for plan search",
    )
    parser.add_argument(
        "--fail-on",
        type=causes,
        metavar="CAUSE[,CAUSE]",
        help="exit 1 when Pending pods with these causes reach --fail-threshold (alerting)",
    )
    parser.add_argument("--fail-threshold", type=int, default=1, metavar="N")
    parser.set_defaults(func=run)


def _with_pods_from(cluster: Cluster, path: Path, auto: bool) -> Cluster:
    """From a scenario file, the stand-in for the Kubernetes API: Pending pods; what metrics
    cannot know of running ones (owner, priority, annotations, cpu/memory requests, node
    selector, affinity, tolerations); of each node what its Node object and its other pods
    would say (allocatable, labels, taints, cordon, CPU-only pods) and what the scheduler
    registered of its cards (NUMA, slots); and, with `--scheduler auto`, the profile, which
    the Kubernetes API's annotations would have told."""
    scenario = load_scenario(path)
    if auto and scenario.scheduler != cluster.scheduler:
        cluster = dataclasses.replace(
            cluster,
            scheduler=scenario.scheduler,
            policy=scenario.policy,
            max_vgpus_per_card=scenario.max_vgpus_per_card,
        )
    described = {p.name: p for p in scenario.pods}
    running = tuple(
        dataclasses.replace(
            p,
            owner=d.owner,
            priority=d.priority,
            annotations=d.annotations,
            resources=d.resources,
            constraints=d.constraints,
        )
        if (d := described.get(p.name)) is not None
        else p
        for p in cluster.pods
    )
    known = {p.name for p in cluster.pods}
    pending = tuple(p for p in described.values() if p.placement is None and p.name not in known)
    nodes = {n.name: n for n in scenario.nodes}
    merged = tuple(
        dataclasses.replace(
            n,
            allocatable=node.allocatable,
            labels=node.labels,
            taints=node.taints,
            unschedulable=node.unschedulable,
            other_pods=n.other_pods if node.other_pods is None else node.other_pods,
            cards=_registered(n.cards, node.cards),
        )
        if (node := nodes.get(n.name)) is not None
        else n
        for n in cluster.nodes
    )
    return dataclasses.replace(cluster, nodes=merged, pods=running + pending)


def _registered(cards: tuple[Card, ...], described: tuple[Card, ...]) -> tuple[Card, ...]:
    """The exporter's cards with the NUMA node and slots the file gives the same index."""
    by_index = {c.index: c for c in described}
    return tuple(
        dataclasses.replace(
            c,
            numa=c.numa if c.numa is not None else d.numa,
            max_vgpus=c.max_vgpus if c.max_vgpus is not None else d.max_vgpus,
        )
        if (d := by_index.get(c.index)) is not None
        else c
        for c in cards
    )


def _inputs(args: argparse.Namespace) -> ReportInputs:
    live = args.prometheus is not None or args.exporters is not None
    if (args.scenario is not None) == live:
        raise InputError("give exactly one source: --scenario, --prometheus or --exporters")
    now = time.time()
    if args.scenario is not None:
        cluster = load_scenario(args.scenario, scheduler=scheduler_choice(args))
        return _add_pods_from(ReportInputs(cluster, f"scenario {args.scenario}", now), args)
    return asyncio.run(_live_inputs(args, now))


async def _live_inputs(args: argparse.Namespace, now: float) -> ReportInputs:
    """State, then history, in one event loop (one connection pool, one loop to set up)."""
    # --scheduler travels in the source config: gathering settles the profile (auto: from
    # the cluster's own annotations) before the cluster is assembled.
    gathered = await gather(source_config(args))
    if args.pods_from is not None:  # the file stands in for Kubernetes
        kept = tuple(w for w in gathered.warnings if not w.startswith("no Kubernetes source"))
        gathered = dataclasses.replace(gathered, warnings=kept)
    print_notes(gathered)
    stale = tuple(
        {
            "subject": s.subject,
            "metric": s.metric,
            "age_seconds": round(s.age_s, 1),
            "ended": s.ended,
        }
        for s in gathered.stale
    )
    inputs = _add_pods_from(
        ReportInputs(gathered.cluster, gathered.source, now, gathered.warnings, stale), args
    )
    if args.prometheus is not None and args.history > 0:
        # Owners from the final cluster: with --pods-from only the file knows them, and
        # right-sizing groups (and shrinks) running pods by owner.
        owners = {p.name: p.owner for p in inputs.cluster.pods if p.owner}
        history = await usage_history(
            args.prometheus, args.history, args.history_step, owners=owners
        )
        inputs = dataclasses.replace(inputs, history=_usable(history))
    return inputs


def _add_pods_from(inputs: ReportInputs, args: argparse.Namespace) -> ReportInputs:
    if args.pods_from is None:
        return inputs
    auto = scheduler_choice(args) in (None, "auto")
    cluster = _with_pods_from(inputs.cluster, args.pods_from, auto)
    source = f"{inputs.source} + pods from {args.pods_from}"
    return dataclasses.replace(inputs, cluster=cluster, source=source)


def _usable(history: pd.DataFrame | None) -> pd.DataFrame | None:
    return history if history is not None and len(history) else None


def _render(report: Report) -> dict[str, str]:
    """The three reports; the Markdown and HTML rendering time goes into the JSON's
    `run.phases.render` (the JSON's own serialisation, last, and the writing are not in it)."""
    from advisor.render.report_html import render_report_html
    from advisor.render.report_markdown import render_report_markdown

    started = time.monotonic()
    markdown = render_report_markdown(report.data)
    html = render_report_html(report.data)
    report.data["run"]["phases"]["render"] = round(time.monotonic() - started, 3)
    return {
        "report.json": json.dumps(report.data, indent=2) + "\n",
        "report.md": markdown,
        "report.html": html,
    }


def _reason(err: Exception) -> str:
    """urllib's errors without their wrapping ("<urlopen error [Errno 111] ...>")."""
    if isinstance(err, urllib.error.HTTPError):
        return f"HTTP {err.code} {err.reason}"
    if isinstance(err, urllib.error.URLError):
        reason = err.reason
        if isinstance(reason, OSError):
            return reason.strerror or str(reason)
        return str(reason)
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err)


def _writable_later(directory: Path, output_dir: Path) -> bool:
    """A directory now, or the output directory, which the run creates."""
    return directory.is_dir() or directory.resolve() == output_dir.resolve()


def run(args: argparse.Namespace) -> int:
    if args.fail_threshold < 1:
        raise InputError("--fail-threshold must be at least 1")
    if args.textfile is not None and not _writable_later(args.textfile.parent, args.output_dir):
        # Found before any report is replaced: a run writes all of its outputs or none.
        raise InputError(f"--textfile {args.textfile}: {args.textfile.parent} is not a directory")
    inputs = _inputs(args)
    options = ReportOptions(time_budget_s=args.time_budget)
    report = build_report(inputs, options, time.monotonic)
    texts = _render(report)  # everything rendered before anything is written
    try:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            write_atomic(args.output_dir / name, text)
        if args.textfile is not None:
            write_textfile(args.textfile, report.figures)
    except OSError as err:
        raise InputError(f"cannot write reports: {err}") from None
    if args.pushgateway is not None:
        try:
            push(args.pushgateway, report.figures)
        except (OSError, ValueError) as err:  # ValueError: a malformed URL
            raise InputError(f"{args.pushgateway}: cannot push: {_reason(err)}") from None
    summary = report.data["diagnosis"]["summary"]
    plan = report.data["plan"]["summary"]
    causes = ", ".join(f"{summary[c]} {c}" for c in CAUSES if summary[c])
    print(
        f"xgpu-advisor: {plural(summary['pending'], 'Pending GPU pod')}"
        + (f" ({causes})" if causes else "")
        + f"; {plural(plan['plans'], 'plan')} rescuing {plural(plan['rescued_pods'], 'pod')}; "
        f"reports in {args.output_dir}/",
        file=sys.stderr,
    )
    if args.fail_on is not None:
        found = sum(summary[c] for c in args.fail_on)
        if found >= args.fail_threshold:
            return EXIT_FINDINGS
    return 0
