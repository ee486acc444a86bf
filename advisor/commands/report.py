"""`xgpu-advisor report`: the cron job. Gather, diagnose, plan, advise; write JSON, Markdown
and HTML to a directory (`--output-dir`, the latest run) and/or the reports' home
(`--reports`, the last `--keep` runs under an index: `advisor.commands.archive`), the
advisor's own series to a textfile and/or a Pushgateway.

Exit codes: 0 done, 2 source or input error, 1 when `--fail-on` findings reach the threshold.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import http.client
import sys
import time
import urllib.error
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.commands.cluster_input import read_input
from advisor.commands.flags.rightsizing import rightsizing_settings
from advisor.commands.flags.scheduler import scheduler_choice
from advisor.errors import EXIT_FINDINGS, InputError
from advisor.words import plural

# The model, the report's code and their libraries (numpy, pandas, prometheus_client) load
# once the cluster is read, so that a missing or unreadable input is refused at once
# (README "Start-up").
if TYPE_CHECKING:
    import pandas as pd

    from advisor.report import Report, ReportInputs

REPORT_FILES = ("report.json", "report.md", "report.html")


def _inputs(args: argparse.Namespace) -> ReportInputs:
    now = time.time()
    return asyncio.run(_read(args, now))


async def _read(args: argparse.Namespace, now: float) -> ReportInputs:
    """State, then history, in one event loop (one connection pool, one loop to set up)."""
    read = await read_input(args, scheduler_choice(args))
    from advisor.report import ReportInputs

    stale = tuple(
        {
            "subject": s.subject,
            "metric": s.metric,
            "age_seconds": round(s.age_s, 1),
            "ended": s.ended,
        }
        for s in read.stale
    )
    inputs = ReportInputs(read.cluster, read.source, now, read.warnings, stale)
    config = read.config
    if config is not None and config.prometheus is not None and args.history > 0:
        # Owners from the final cluster: with --pods-from only the file knows them, and
        # right-sizing groups (and shrinks) running pods by owner.
        owners = {p.name: p.owner for p in inputs.cluster.pods if p.owner}
        from advisor.sources.history import usage_history

        history = await usage_history(
            config.prometheus, args.history, args.history_step, owners=owners, source=config
        )
        inputs = dataclasses.replace(inputs, history=_usable(history))
    return inputs


def _usable(history: pd.DataFrame | None) -> pd.DataFrame | None:
    return history if history is not None and len(history) else None


def _render(report: Report) -> dict[str, str]:
    """The three reports; the Markdown and HTML rendering time goes into the JSON's
    `run.phases.render` (the JSON's own serialisation, last, and the writing are not in it)."""
    from advisor.output.jsontext import dumps_indented
    from advisor.render.report import render_report_pages

    started = time.monotonic()
    markdown, html = render_report_pages(report.data)
    report.data["run"]["phases"]["render"] = round(time.monotonic() - started, 3)
    return {
        "report.json": dumps_indented(report.data, end="\n"),  # json.dumps(indent=2)'s text
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


def _writable_later(directory: Path, created: list[Path]) -> bool:
    """A directory now, or one the run creates (--output-dir, --reports)."""
    return directory.is_dir() or any(directory.resolve() == d.resolve() for d in created)


def _summary_line(report: Report) -> str:
    """Pending pods by cause and what the plans rescue: the run in one line."""
    from advisor.core.diagnosis import shown_causes

    summary = report.data["diagnosis"]["summary"]
    plan = report.data["plan"]["summary"]
    # the job layer's causes too (gang, queue, quota), as every page counts them
    causes = ", ".join(f"{summary[c]} {c}" for c in shown_causes(summary) if summary[c])
    return (
        f"{plural(summary['pending'], 'Pending GPU pod')}"
        + (f" ({causes})" if causes else "")
        + f"; {plural(plan['plans'], 'plan')} rescuing {plural(plan['rescued_pods'], 'pod')}"
    )


def _write(args: argparse.Namespace, report: Report, texts: dict[str, str]) -> str:
    """Every output of the run; where its reports went."""
    from advisor.commands.archive import INDEX, store_run
    from advisor.metrics import write_textfile
    from advisor.scenario import write_atomic

    where = []
    if args.reports is not None:  # first: a run that fails there leaves nothing behind
        summary = {"generated_at": report.data["generated_at"], "summary": _summary_line(report)}
        stamp = datetime.fromisoformat(report.data["generated_at"]).timestamp()
        folder = store_run(args.reports, texts, summary, stamp, args.keep)
        where.append(f"{folder}/ (index {args.reports / INDEX})")
    if args.output_dir is not None:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            write_atomic(args.output_dir / name, text)
        where.insert(0, f"{args.output_dir}/")
    if args.textfile is not None:
        write_textfile(args.textfile, report.figures)
    return " and ".join(where)


def run(args: argparse.Namespace) -> int:
    if args.fail_threshold < 1:
        raise InputError("--fail-threshold must be at least 1")
    if args.output_dir is None and args.reports is None:
        raise InputError(
            "give --output-dir (the latest reports) or --reports (a home for the last --keep runs)"
        )
    created = [d for d in (args.output_dir, args.reports) if d is not None]
    if args.textfile is not None and not _writable_later(args.textfile.parent, created):
        # Found before any report is replaced: a run writes all of its outputs or none.
        raise InputError(f"--textfile {args.textfile}: {args.textfile.parent} is not a directory")
    inputs = _inputs(args)
    from advisor.core.diagnosis import EVERY_CAUSE
    from advisor.metrics import push
    from advisor.report import ReportOptions, build_report

    options = ReportOptions(
        time_budget_s=args.time_budget,
        plan_work=args.plan_work,
        rightsizing=rightsizing_settings(args),
    )
    report = build_report(inputs, options, time.monotonic)
    texts = _render(report)  # everything rendered before anything is written
    try:
        where = _write(args, report, texts)
    except OSError as err:
        raise InputError(f"cannot write reports: {err}") from None
    if args.pushgateway is not None:
        try:
            push(args.pushgateway, report.figures)
        # ValueError, InvalidURL: a malformed URL (http.client's InvalidURL is neither)
        except (OSError, ValueError, http.client.InvalidURL) as err:
            raise InputError(f"{args.pushgateway}: cannot push: {_reason(err)}") from None
    summary = report.data["diagnosis"]["summary"]
    print(f"xgpu-advisor: {_summary_line(report)}; reports in {where}", file=sys.stderr)
    if args.fail_on is not None:
        found = sum(summary.get(c, 0) for c in args.fail_on)
        if found >= args.fail_threshold:
            chosen = ",".join(c for c in EVERY_CAUSE if c in args.fail_on)
            print(  # a pipeline's log says why it stopped
                f"xgpu-advisor: --fail-on {chosen}: {plural(found, 'Pending GPU pod')} "
                f"with those causes, at least --fail-threshold {args.fail_threshold}; "
                f"exit {EXIT_FINDINGS}",
                file=sys.stderr,
            )
            return EXIT_FINDINGS
    return 0
