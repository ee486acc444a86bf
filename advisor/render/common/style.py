"""Colours of the HTML pages, and their stylesheets (package data in `render/assets/`)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from functools import cache
from importlib import resources

# Badge colours per cause (and per capacity sub-case).
CAUSE_COLOURS: Mapping[str, str] = {
    "schedulable": "#15803d",
    "node-resources": "#0e7490",  # cyan: the node's cpu/memory, not its cards
    "fragmentation": "#b45309",
    "capacity": "#c2410c",
    "capacity-consolidate": "#c2410c",
    "capacity-scale-up": "#b91c1c",
    "no-plan": "#b91c1c",  # scale up, as capacity-scale-up
    "unsatisfiable": "#7f1d1d",
    "invalid": "#475569",
    "gang": "#6d28d9",  # violet: the job, not the cards, keeps it out
    "queue": "#9d174d",  # rose: the queue's limit, not the cards
    "quota": "#86198f",  # fuchsia: the namespace's quota, not the cards
    "mig-geometry": "#a16207",  # amber, beside fragmentation: where MIG instances sit
}


# A colour family per isolation mode; a pod keeps its shade on every card it spans.
MODE_PALETTES: Mapping[int, tuple[str, ...]] = {
    0: ("#1d4ed8", "#2563eb", "#1e40af", "#3b6fd8", "#1e3a8a", "#2f5fce"),
    1: ("#7c3aed", "#6d28d9", "#8b5cf6", "#5b21b6", "#7e47e6", "#6a35d0"),
    2: ("#64748b", "#475569"),
}


MODE_TAGS: Mapping[int, str] = {0: "mem", 1: "mem+core", 2: "unused"}


def pod_colour(pod: str, mode: int) -> str:
    palette = MODE_PALETTES.get(mode, MODE_PALETTES[2])
    return palette[zlib.crc32(pod.encode("utf-8")) % len(palette)]


@cache
def asset(name: str) -> str:
    """A file of `advisor/render/assets/` (shipped as package data), read once."""
    return resources.files("advisor.render").joinpath("assets", name).read_text(encoding="utf-8")


def stylesheet(*names: str) -> str:
    """The named stylesheets ("base", "plan", "report"), in order, as one inline block."""
    return "".join("\n" + asset(f"{name}.css") for name in names)
