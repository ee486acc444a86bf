"""The MIG re-partitions of `mig-geometry` pods (docs/design.md §13), as the diagnose, plan
and report pages show them: each pod's advice's `repartition`, the one the advice names."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from advisor.render.common.html import escape, html_table, with_code
from advisor.render.common.markdown import escape_cell, markdown_table
from advisor.render.common.values import as_int, as_list, as_map, as_str
from advisor.schemas import MigProfileJson, MigRepartitionJson, PodDiagnosisJson, UnresolvedJson

_FIGURES = (
    "free_instances",
    "room_if_repartitioned",
    "pending_pods",
    "pending_instances",
    "waiting_pods",
)
_HEADS = ["Free", "Room re-partitioned", "Pending pods", "Instances asked", "Still waiting"]
PROFILES_NOTE = (
    "Before this cycle: free instances of each profile, the most the MIG cards' unoccupied "
    "slices would hold were their free instances destroyed, and the Pending pods asking it."
)

# What the pages say once under the re-partitions: what the file does and does not fix.
NOTE = (
    "nvidia-mig-parted clears a card whose profile counts change and creates the new counts; "
    "NVML chooses the starts, so the layout shown is the one the advisor assumed and verified. "
    "Drain the named pods first (their controllers re-create them; a bare pod is lost), then "
    "apply the configuration (`nvidia-mig-parted apply -f FILE -c NAME`, or the GPU "
    "operator's label `nvidia.com/mig.config=NAME` over a mig-manager ConfigMap holding it)."
)


def _figures(r: MigProfileJson) -> tuple[int, int, int, int, int]:
    return (
        r["free_instances"],
        r["room_if_repartitioned"],
        r["pending_pods"],
        r["pending_instances"],
        r["waiting_pods"],
    )


def mig_profiles_markdown(rows: Sequence[MigProfileJson]) -> list[str]:
    """The "MIG profiles" section: each profile's fragmentation figures (none: no lines)."""
    if not rows:
        return []
    body = [[escape_cell(r["profile"]), *map(str, _figures(r))] for r in rows]
    table = markdown_table(["Profile", *_HEADS], body, right={1, 2, 3, 4, 5})
    return ["## MIG profiles", "", PROFILES_NOTE, "", *table, ""]


def mig_profiles_html(rows: Sequence[MigProfileJson]) -> str:
    """The "MIG profiles" panel (empty when none)."""
    if not rows:
        return ""
    body = [[escape(r["profile"]), *map(str, _figures(r))] for r in rows]
    table = html_table(["Profile", *_HEADS], body, numeric={1, 2, 3, 4, 5})
    # the note under the table: a reader meets the figures first, then what they count
    return (
        f'<section class="panel"><h3>MIG profiles</h3>{table}'
        f"<p>{escape(PROFILES_NOTE)}</p></section>"
    )


def read_mig_profiles(value: Any) -> list[MigProfileJson]:
    """A saved file's `mig_profiles` (none: empty)."""
    rows: list[MigProfileJson] = []
    for raw in map(as_map, value if isinstance(value, list) else []):
        figures = {k: max(as_int(raw.get(k)), 0) for k in _FIGURES}
        rows.append(
            {
                "profile": as_str(raw.get("profile"), "?"),
                "free_instances": figures["free_instances"],
                "room_if_repartitioned": figures["room_if_repartitioned"],
                "pending_pods": figures["pending_pods"],
                "pending_instances": figures["pending_instances"],
                "waiting_pods": figures["waiting_pods"],
            }
        )
    return rows


def read_repartition(value: Any) -> MigRepartitionJson | None:
    """A saved file's `advice.repartition`, or None."""
    raw = as_map(value)
    node = as_str(raw.get("node"))
    if not node:
        return None

    def strings(value: Mapping[str, Any], key: str) -> list[str]:
        items = value.get(key)
        return [as_str(v) for v in items] if isinstance(items, list) else []

    return {
        "node": node,
        "cards": [
            {
                "card": as_int(cut.get("card")),
                "before": strings(cut, "before"),
                "after": strings(cut, "after"),
            }
            for cut in map(as_map, as_list(raw.get("cards")))
        ],
        "drain": strings(raw, "drain"),
        "config_name": as_str(raw.get("config_name")),
        "current_config": as_str(raw.get("current_config")) or None,
        "mig_parted": as_str(raw.get("mig_parted")),
    }


def repartitions(
    entries: Iterable[PodDiagnosisJson | UnresolvedJson],
) -> list[tuple[str, MigRepartitionJson]]:
    """Each pod with a re-partition in its advice, in the entries' order."""
    return [
        (e["pod"], cut)
        for e in entries
        if "advice" in e and (cut := e["advice"].get("repartition")) is not None
    ]


def _line(cut: MigRepartitionJson) -> str:
    drain = ", ".join(cut["drain"]) or "none"
    cards = "; ".join(
        f"card {c['card']}: {' '.join(c['before']) or 'no instance'} → {' '.join(c['after'])}"
        for c in cut["cards"]
    )
    now = f"; the node's nvidia.com/mig.config now: {cut['current_config']}"
    return f"{cut['node']} {cards}; drain first: {drain}" + (now if cut["current_config"] else "")


def repartition_markdown(found: Sequence[tuple[str, MigRepartitionJson]]) -> list[str]:
    """The "MIG re-partitions" section (no lines when none)."""
    if not found:
        return []
    lines = ["## MIG re-partitions", "", NOTE, ""]
    for pod, cut in found:
        lines += [
            f"- **{escape_cell(pod)}**: {escape_cell(_line(cut))}",
            "",
            "  ```yaml",
            *(f"  {row}" for row in cut["mig_parted"].rstrip("\n").split("\n")),
            "  ```",
            "",
        ]
    return lines


def repartition_html(found: Sequence[tuple[str, MigRepartitionJson]]) -> str:
    """The "MIG re-partitions" panel (empty when none)."""
    if not found:
        return ""
    items = "".join(
        f'<div><strong class="mono">{escape(pod)}</strong> {escape(_line(cut))}'
        f'<pre class="mono">{escape(cut["mig_parted"])}</pre></div>'
        for pod, cut in found
    )
    return (
        f'<section class="panel"><h3>MIG re-partitions</h3><p>{with_code(NOTE)}</p>'
        f"{items}</section>"
    )
