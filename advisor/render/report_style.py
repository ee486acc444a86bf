"""The report page's stylesheet, on top of the diagnosis and plan pages' (`_style.CSS`,
`plan_html.PLAN_CSS`)."""

from __future__ import annotations

REPORT_CSS = """
h2.section { font-size: 19px; margin: 28px 0 0; padding-left: 10px;
             border-left: 4px solid var(--ink); }
.meta.top { margin: 2px 0 0; }
.toc { margin-top: 12px; font-size: 13px; color: var(--muted); }
.toc a { color: #1d4ed8; text-decoration: none; }
.alert { margin-top: 12px; padding: 10px 14px; border-radius: 8px; border: 1px solid; }
.alert ul { margin: 4px 0 0; padding-left: 18px; }
.alert.warn { background: #fffbeb; border-color: #f59e0b; color: #78350f; }
.alert.stale { background: #fef2f2; border-color: #dc2626; color: #7f1d1d; }
.alert.stale strong { text-transform: uppercase; letter-spacing: .02em; }
.alert table { margin-top: 6px; background: rgba(255,255,255,.6); }
.alert th, .alert td { padding: 4px 8px; border-color: #fecaca; color: #7f1d1d; }
.tiles { display: grid; grid-template-columns: 1.25fr 1fr 1fr 1fr; gap: 14px; }
.tile { border-left: 4px solid #94a3b8; padding: 2px 0 2px 12px; min-width: 0; }
.tile.good { border-color: #15803d; }
.tile.bad { border-color: #dc2626; }
.tile .label { font-size: 12px; text-transform: uppercase; letter-spacing: .04em;
               color: var(--muted); font-weight: 600; }
.tile .value { font-size: 24px; font-weight: 700; line-height: 1.25; margin: 2px 0 6px; }
.tile.bad .value { color: #b91c1c; }
.tile .detail { font-size: 12.5px; color: #334155; }
.tile.pending { border-color: var(--ink); }
.tile .badges { gap: 5px; }
.tile .badge { font-size: 12px; padding: 2px 9px 2px 3px; }
.meter { position: relative; height: 10px; border-radius: 5px; background: #f1f5f9;
         margin: 0 0 4px; overflow: hidden; }
.meter i { position: absolute; left: 0; top: 0; bottom: 0; }
.meter i.bound, .meter-key i.bound { background: #cbd5e1; }
.meter i.ideal, .meter-key i.ideal { background: #64748b; }
.meter i.got, .meter-key i.got { background: #15803d; }
.meter-key { display: flex; gap: 10px; font-size: 11px; color: var(--muted); margin-bottom: 6px; }
.meter-key span { display: inline-flex; align-items: center; gap: 4px; }
.meter-key i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; }
.cause-chart { width: 100%; }
.chart { display: block; max-width: 100%; height: auto; }
.chart text { font: 13px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial,
              sans-serif; fill: #334155; }
.chart text.count { font-weight: 700; fill: var(--ink); }
.usage-chart { width: 100%; margin-top: 8px; }
.usage-chart text { font-size: 12px; fill: var(--muted); }
.usage-chart text.axis-title { font-weight: 600; }
.two { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; }
.two > .panel { margin-top: 16px; overflow-x: auto; }
.two td .mono { white-space: nowrap; }
.lead { margin: 0; }
dl.figures { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 14px;
             margin: 0; }
dl.figures dt { font-size: 12px; color: var(--muted); text-transform: uppercase;
                letter-spacing: .04em; font-weight: 600; }
dl.figures dd { margin: 2px 0 0; font-size: 15px; font-weight: 600; }
th.num { text-align: right; white-space: nowrap; }
td { font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td .wl { display: inline-block; min-width: 190px; }
.ratio { width: 72px; height: 8px; background: #f1f5f9; border-radius: 4px; overflow: hidden;
         margin: 3px 0 0 auto; }
.ratio i { display: block; height: 100%; background: #b45309; }
.fit { margin: 0 0 6px; font-weight: 600; }
td .sub { color: var(--muted); font-size: 12px; }
.wl { font-weight: 600; overflow-wrap: anywhere; }
svg.sizing { display: block; margin-top: 2px; }
.sw.tick { width: 3px; background: #0f172a; }
.sw.dash { width: 0; height: 16px; border-left: 2px dashed #4338ca; border-radius: 0; }
.legend + table, .legend + svg { margin-top: 8px; }
.meta + .legend { margin-top: 6px; }
"""
