"""The reports' home page: the kept advisor runs, newest first, each linking its reports.

One self-contained HTML file (no script, no outside resource), so that it works opened from
disk and served under a Content-Security-Policy that allows nothing but inline styles.
Every text from a run (its name, its summary) is escaped; every link is a relative,
percent-encoded path into the run's own folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from urllib.parse import quote

REPORT_LINKS = (("report.html", "HTML"), ("report.md", "Markdown"), ("report.json", "JSON"))

INDEX_CSS = """
body { margin: 0; background: #f1f5f9; color: #0f172a;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial,
       sans-serif; }
main { max-width: 72rem; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
p.lead { color: #64748b; margin: 0 0 1rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid #e2e8f0;
         vertical-align: top; }
th { font-weight: 600; background: #f8fafc; }
td.when { white-space: nowrap; font-variant-numeric: tabular-nums; }
td.links a { margin-right: .6rem; }
tr.latest td { background: #eff6ff; }
"""


@dataclass(frozen=True, slots=True)
class IndexRun:
    """One kept run as the index shows it."""

    folder: str  # the run's folder name, relative to the index
    generated_at: str  # when the run was made, as the reader should see it
    files: tuple[str, ...]  # which of REPORT_LINKS' files the folder holds
    summary: str = ""  # one line: Pending pods, causes, plans; "" when unknown


def render_archive_index(runs: Sequence[IndexRun], keep: int) -> str:
    """The index page of `runs` (already newest first)."""
    rows = "".join(_row(run, latest=i == 0) for i, run in enumerate(runs))
    count = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
    body = (
        "<table><thead><tr><th>Run (UTC)</th><th>Summary</th><th>Reports</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if runs
        else "<p>No run has finished yet.</p>"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>xgpu-advisor reports</title>"
        f"<style>{INDEX_CSS}</style></head><body><main>"
        "<h1>xgpu-advisor reports</h1>"
        f'<p class="lead">{escape(count)}, newest first; the last {keep} are kept.</p>'
        f"{body}</main></body></html>\n"
    )


def _row(run: IndexRun, latest: bool) -> str:
    folder = quote(run.folder, safe="")
    links = " ".join(
        f'<a href="{escape(folder)}/{escape(quote(name))}">{escape(label)}</a>'
        for name, label in REPORT_LINKS
        if name in run.files
    )
    css = ' class="latest"' if latest else ""
    return (
        f'<tr{css}><td class="when">{escape(run.generated_at)}</td>'
        f'<td>{escape(run.summary)}</td><td class="links">{links}</td></tr>'
    )
