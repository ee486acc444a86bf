"""Fragmentation's JSON forms (`advisor.core.fragmentation`): the report's full table, the
what-if's cluster figures, and the replay's figures in GPUs."""

from __future__ import annotations

from advisor import schemas
from advisor.core.fragmentation import Fragmentation, NodeFragmentation, WeightedShape


def shape_json(weighted: WeightedShape) -> schemas.FragmentationShapeJson:
    s = weighted.shape
    return {
        "gpus": s.gpus,
        "card_memory_mib": s.card_memory_mib,
        "card_core_percent": s.card_core,
        "share": round(weighted.share, 6),
        "pods": weighted.pods,
    }


def summary_json(f: Fragmentation) -> schemas.FragmentationSummaryJson:
    """Cluster figures only (what the what-if and the metrics need)."""
    return {
        "free_mib": f.free_mib,
        "fragment_mib": round(f.fragment_mib, 1),
        "stranded_mib": f.stranded_mib,
        "ratio": round(f.ratio, 6),
        "stranded_ratio": round(f.stranded_ratio, 6),
        "free_gpus": round(f.free_gpus, 3),
        "fragment_gpus": round(f.fragment_gpus, 3),
        "stranded_gpus": round(f.stranded_gpus, 3),
    }


def node_json(n: NodeFragmentation) -> schemas.FragmentedNodeJson:
    return {
        "node": n.node,
        "free_mib": n.free_mib,
        "fragment_mib": round(n.fragment_mib, 1),
        "stranded_mib": n.stranded_mib,
        "ratio": round(n.fragment_mib / n.free_mib, 6) if n.free_mib else 0.0,
    }


def fragmentation_json(
    f: Fragmentation, node_limit: int | None = None
) -> schemas.ReportFragmentationJson:
    """Cluster figures, the shapes, and the nodes most fragmented first (at most `node_limit`)."""
    ranked = sorted(f.nodes, key=lambda n: (-n.fragment_mib, n.node))
    listed = ranked if node_limit is None else ranked[:node_limit]
    return {
        **summary_json(f),
        "shapes": [shape_json(w) for w in f.shapes],
        "nodes": [node_json(n) for n in listed],
        "nodes_omitted": len(ranked) - len(listed),
    }


def replay_fragmentation_json(f: Fragmentation) -> schemas.ReplayFragmentationJson:
    """A replay's end state (`core.fragmentation.fragmentation` of it), in GPUs like the rest
    of the replay figures: the typical shapes are those of every GPU pod replayed, stranded
    counts against the pods left Pending."""
    return {
        "free_gpus": round(f.free_gpus, 3),
        "fragment_gpus": round(f.fragment_gpus, 3),
        "fragmentation_ratio": round(f.ratio, 6),
        "stranded_gpus": round(f.stranded_gpus, 3),
        "typical_shapes": len(f.shapes),
    }
