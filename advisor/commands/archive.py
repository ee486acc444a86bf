"""The reports' home: each `report` run in a folder of its own, the last N kept, an index.

    REPORTS/index.html                      the kept runs, newest first (archive_index)
    REPORTS/20261202T014500Z/report.html    one run: its three reports and summary.json
    REPORTS/20261202T014000Z/...

A run is written into a hidden staging folder and renamed into place whole, so a reader (the
index, `xgpu-advisor serve`, a person) never sees half a run. Only then is the index rewritten
(atomically: written beside and renamed) and only then are the runs beyond the newest N
removed: a failed run leaves the previous ones and their index as they were. A run removed
is first renamed to a hidden name, so a run killed half-way through deleting it leaves no
half a run in view. One writer at a time (the CronJob forbids overlapping runs); a staging
folder a crashed run left behind is removed by a later run once it is an hour old, a hidden
removed run at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.errors import known
from advisor.render.archive_index import REPORT_LINKS, IndexRun, render_archive_index
from advisor.scenario import write_atomic

INDEX = "index.html"
SUMMARY = "summary.json"
RUN_FOLDER = re.compile(r"(?P<stamp>[0-9]{8}T[0-9]{6}Z)(?:-(?P<n>[0-9]{1,6}))?")
STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
STAGING_SUFFIX = ".partial"
REMOVED_SUFFIX = ".removed"
STALE_STAGING_S = 3600.0


def folder_name(generated_at: float) -> str:
    """The run's folder: its UTC time to the second (20261202T014500Z)."""
    return datetime.fromtimestamp(generated_at, UTC).strftime(STAMP_FORMAT)


def _order(name: str) -> tuple[str, int]:
    match = known(RUN_FOLDER.fullmatch(name), f"a run folder's name ({name})")
    return match["stamp"], int(match["n"] or 1)


def list_runs(root: Path) -> list[str]:
    """The run folders under `root`, newest first (a second run in one second is -2, -3...).
    Anything else there (the index, a textfile, a symlink) is not a run."""
    names = [
        entry.name
        for entry in os.scandir(root)
        if RUN_FOLDER.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
    ]
    return sorted(names, key=_order, reverse=True)


def store_run(
    root: Path,
    texts: Mapping[str, str],
    summary: Mapping[str, Any],
    generated_at: float,
    keep: int,
) -> Path:
    """Write one run's `texts` (file name -> content) and `summary` as a new run folder,
    rewrite the index, then remove the runs beyond the newest `keep`. Returns the folder."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}")
    root.mkdir(parents=True, exist_ok=True)
    base = folder_name(generated_at)
    staging = Path(tempfile.mkdtemp(prefix=f".{base}.", suffix=STAGING_SUFFIX, dir=root))
    try:
        for name, text in texts.items():
            (staging / name).write_text(text, encoding="utf-8")
        (staging / SUMMARY).write_text(json.dumps(dict(summary), indent=1) + "\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # mkdtemp's 0700 would hide the run from readers
        final = _rename_free(staging, root, base)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    runs = list_runs(root)
    write_atomic(
        root / INDEX, render_archive_index([index_run(root, r) for r in runs[:keep]], keep)
    )
    for old in runs[keep:]:
        gone = root / f".{old}{REMOVED_SUFFIX}"
        shutil.rmtree(gone, ignore_errors=True)  # a killed run's, of the same name
        os.rename(root / old, gone)  # out of view in one step, then deleted
        shutil.rmtree(gone)
    _remove_stale_staging(root)
    return final


def _rename_free(staging: Path, root: Path, base: str) -> Path:
    """Rename `staging` to `base`, or `base-2`, `base-3`... when a run of that second is
    there (rename onto a non-empty folder fails, so a run is never replaced)."""
    for n in range(1, 1000):
        final = root / (base if n == 1 else f"{base}-{n}")
        if final.exists() or final.is_symlink():
            continue
        try:
            os.rename(staging, final)
        except OSError:
            if final.exists():
                continue
            raise
        return final
    raise OSError(f"{root}: more than 999 runs in the second {base}")


def _remove_stale_staging(root: Path) -> None:
    cutoff = time.time() - STALE_STAGING_S
    for entry in os.scandir(root):
        hidden = entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
        removed = hidden and entry.name.endswith(REMOVED_SUFFIX)
        stale = (
            hidden
            and entry.name.endswith(STAGING_SUFFIX)
            and entry.stat(follow_symlinks=False).st_mtime < cutoff
        )
        if removed or stale:
            shutil.rmtree(entry.path, ignore_errors=True)


def index_run(root: Path, folder: str) -> IndexRun:
    """A run as the index lists it: its time and summary from summary.json when readable,
    else the time its folder is named by."""
    files = tuple(name for name, _ in REPORT_LINKS if (root / folder / name).is_file())
    when = datetime.strptime(_order(folder)[0], STAMP_FORMAT).strftime("%Y-%m-%d %H:%M:%S")
    summary = ""
    try:
        data = json.loads((root / folder / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("summary"), str):
        summary = data["summary"]
    return IndexRun(folder, when, files, summary)
