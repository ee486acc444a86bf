"""Colours and the inline stylesheet of the HTML report (one self-contained file)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping

# Badge colours per cause (and per capacity sub-case).
CAUSE_COLOURS: Mapping[str, str] = {
    "schedulable": "#15803d",
    "node-resources": "#0e7490",  # cyan: the node's cpu/memory, not its cards
    "fragmentation": "#b45309",
    "capacity": "#c2410c",
    "capacity-consolidate": "#c2410c",
    "capacity-scale-up": "#b91c1c",
    "unsatisfiable": "#7f1d1d",
    "invalid": "#475569",
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


CSS = """
:root { --ink:#0f172a; --muted:#64748b; --line:#e2e8f0; --panel:#ffffff; --bg:#f1f5f9;
        --bad:#dc2626; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial,
       sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 12px 32px; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono",
              monospace; font-size: 12.5px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0; }
h3 { font-size: 13px; margin: 0 0 8px; text-transform: uppercase; letter-spacing: .04em;
     color: var(--muted); }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px;
         padding: 16px 18px; margin-top: 16px; box-shadow: 0 1px 2px rgba(15,23,42,.05); }
header.panel { margin-top: 0; }
.headline { font-size: 16px; margin: 2px 0 12px; }
.meta { color: var(--muted); margin: 10px 0 0; }
.badges { display: flex; flex-wrap: wrap; gap: 8px; }
.badge { display: inline-flex; align-items: center; gap: 6px; color: #fff; border-radius: 999px;
         padding: 3px 12px 3px 4px; font-weight: 600; font-size: 13px; white-space: nowrap; }
.badge b { background: rgba(255,255,255,.25); border-radius: 999px; min-width: 24px;
           padding: 0 6px; text-align: center; }
.badge.zero { opacity: .35; }
.badge.total { background: var(--ink); }
.tag { display: inline-block; color: #fff; border-radius: 4px; padding: 0 6px;
       font-size: 11.5px; font-weight: 600; white-space: nowrap; vertical-align: 1px; }
.advice { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 10px; }
.advice div { border-left: 4px solid; padding: 6px 10px; background: #f8fafc;
              border-radius: 0 6px 6px 0; }
.advice p { margin: 2px 0 0; }
.advice .who { color: var(--muted); font-size: 12.5px; overflow-wrap: anywhere; }
.legend { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; color: #334155;
          font-size: 13px; }
.legend span { display: inline-flex; align-items: center; gap: 6px; }
.sw { display: inline-block; width: 28px; height: 14px; border-radius: 3px; }
.node-head { display: flex; align-items: baseline; gap: 14px; flex-wrap: wrap;
             padding-bottom: 10px; margin-bottom: 10px; border-bottom: 1px solid var(--line); }
.node-head h2 { font-size: 17px; }
.node-head .stat { color: var(--muted); }
.node-head .warn { color: var(--bad); font-weight: 600; }
.node-body { display: grid; grid-template-columns: minmax(0, 1fr) 280px; gap: 18px; }
.card { display: grid; grid-template-columns: 78px minmax(0, 1fr) 136px; gap: 10px;
        align-items: center; padding: 4px 0; }
.card-label { line-height: 1.3; white-space: nowrap; overflow: hidden; }
.card.unhealthy .card-label strong, .sick-text { color: var(--bad); font-weight: 600; }
.bar { display: flex; height: 38px; border-radius: 6px; overflow: hidden;
       border: 1px solid #cbd5e1; background: #f8fafc; }
.seg { position: relative; height: 100%; color: #fff; padding: 3px 6px; overflow: hidden;
       border-right: 2px solid #fff; background: var(--c); font-size: 11.5px; line-height: 15px;
       white-space: nowrap; }
.seg .name, .seg .mib, .free .mib { display: block; overflow: hidden; text-overflow: ellipsis; }
.seg .name { font-weight: 600; }
.seg .mib { opacity: .9; }
.seg.narrow { padding: 0; }
.seg.narrow span { display: none; }
.seg.pending { background: repeating-linear-gradient(135deg, var(--c) 0 6px, #fff 6px 9px);
               box-shadow: inset 0 0 0 2px var(--c); }
.seg.pending .name, .seg.pending .mib { color: var(--ink); background: rgba(255,255,255,.9);
                                        margin-right: auto; width: fit-content; max-width: 100%;
                                        padding: 0 3px; border-radius: 3px; }
.free { flex: 1 1 auto; min-width: 0; height: 100%; padding: 3px 8px; color: var(--muted);
        font-size: 11.5px; line-height: 15px; white-space: nowrap; overflow: hidden; }
.free.narrow span { display: none; }
.card.unhealthy .bar { border: 2px solid var(--bad); }
.card.unhealthy .free { background: repeating-linear-gradient(45deg, #fee2e2 0 6px, #fff 6px 12px);
                        color: var(--bad); font-weight: 600; }
.card.unhealthy .seg { opacity: .55; }
.card-stats { font-size: 12.5px; line-height: 1.3; text-align: right; }
.card-stats .sub { color: var(--muted); font-size: 11.5px; white-space: nowrap; overflow: hidden;
                   text-overflow: ellipsis; }
aside.node-pods { border-left: 1px solid var(--line); padding-left: 16px; }
.none { color: var(--muted); font-style: italic; margin: 0; }
.pp { margin: 0 0 12px; }
.pp .pod { font-weight: 600; overflow-wrap: anywhere; margin-bottom: 2px; }
.pp .req { color: var(--muted); font-size: 12.5px; }
.pp ul, td ul { margin: 4px 0 0; padding-left: 18px; font-size: 12.5px; color: #334155; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 7px 8px;
         border-bottom: 1px solid var(--line); }
th { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
td.num { text-align: right; }
td.pod { min-width: 190px; overflow-wrap: anywhere; font-weight: 600; padding-top: 9px; }
td .tag { white-space: nowrap; }
details summary { cursor: pointer; color: #334155; font-size: 12.5px; }
footer { color: var(--muted); font-size: 12px; margin-top: 16px; text-align: center; }
"""
