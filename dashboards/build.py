"""Render the dashboards to JSON files, and tell whether files on disk are stale."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from dashboards import advisor, cluster, node, workload
from dashboards.common import UID, Json

DEFAULT_OUT = Path(__file__).resolve().parent / "json"
# Files named like ours in an output folder are ours: `build` removes ones it no longer
# writes (and `check` reports them), so a renamed dashboard leaves nothing behind.
OWNED_GLOB = "xgpu-*.json"

BUILDERS: dict[str, Callable[[], Json]] = {
    UID["cluster"]: cluster.dashboard,
    UID["node"]: node.dashboard,
    UID["workload"]: workload.dashboard,
    UID["advisor"]: advisor.dashboard,
}


def render() -> dict[str, str]:
    """File name -> JSON text, deterministic (sorted keys, fixed ids and positions)."""
    return {
        f"{uid}.json": json.dumps(build(), indent=2, sort_keys=True) + "\n"
        for uid, build in BUILDERS.items()
    }


def write(out: Path) -> list[Path]:
    """Write every dashboard into `out`, remove stale files of ours; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    files = render()
    for extra in out.glob(OWNED_GLOB):
        if extra.name not in files:
            extra.unlink()
    written = []
    for name, text in files.items():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def stale(out: Path) -> list[str]:
    """Problems that make `out` differ from a fresh build; empty when it is current."""
    files = render()
    problems = [
        f"{out / name}: missing" if not (out / name).exists() else f"{out / name}: out of date"
        for name, text in files.items()
        if not (out / name).exists() or (out / name).read_text(encoding="utf-8") != text
    ]
    problems += [
        f"{extra}: not generated any more"
        for extra in sorted(out.glob(OWNED_GLOB))
        if extra.name not in files
    ]
    return problems
