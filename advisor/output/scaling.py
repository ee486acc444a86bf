"""Scaling's JSON forms (`advisor.core.scaling`, `scaling.down`, `scaling.templates`, `relief`,
`headroom`): the plan's scale-up, scale-down and relief entries and the report's headroom."""

from __future__ import annotations

from typing_extensions import TypedDict

from advisor import schemas
from advisor.core.nodefilters import NOT_KNOWN, bytes_text, cpu_text
from advisor.core.scaling import ScaleUp
from advisor.core.scaling.down import HeldNode, ScaleDown
from advisor.core.scaling.headroom import Headroom
from advisor.core.scaling.relief import Relief
from advisor.core.scaling.templates import NodeShape, NotTriggered


def node_shape_json(shape: NodeShape) -> schemas.NodeShapeJson:
    """The card shape; allocatable, labels and taints only where the template has them
    (so a GPU-only cluster's entries read as they always did)."""
    entry: schemas.NodeShapeJson = {
        "cards": shape.cards,
        "memory_mib": shape.memory_mib,
        "model": shape.model,
    }
    a = shape.allocatable
    if a != NOT_KNOWN:
        entry["allocatable"] = {
            key: value
            for key, value in (
                ("cpu", None if a.cpu_milli is None else cpu_text(a.cpu_milli)),
                ("memory", None if a.memory_bytes is None else bytes_text(a.memory_bytes)),
                ("pods", a.pods),
            )
            if value is not None
        }
    if shape.labels:
        entry["labels"] = dict(shape.labels)
    if shape.taints:
        entry["taints"] = [
            {"key": t.key, "value": t.value, "effect": t.effect} for t in shape.taints
        ]
    count, cpu, memory = shape.reserved
    if count:
        entry["reserved"] = {"pods": count, "cpu": cpu_text(cpu), "memory": bytes_text(memory)}
    if shape.mig:
        entry["mig"] = [
            None if card is None else [f"{m.profile}@{m.start}" for m in card] for card in shape.mig
        ]
        entry["mig_strategy"] = shape.mig_strategy
    return entry


def scale_up_json(step: ScaleUp) -> schemas.ScaleUpJson:
    entry: schemas.ScaleUpJson = {
        "shape": node_shape_json(step.shape),
        "nodes": step.nodes,
        "for": list(step.pods),
    }
    if step.new_shape:
        entry["new_shape"] = True
        entry["note"] = "no existing node shape can host these pods"
    if step.nodes != step.packed_estimate:
        entry["packed_estimate"] = step.packed_estimate
        entry["note_estimate"] = (
            "packed alone these pods need fewer nodes; scheduled with the whole queue "
            "under this node policy they need the count given"
        )
    if not step.verified:
        entry["verified"] = False
    entry["actor"] = step.actor
    if step.pool is not None:
        entry["node_pool"] = step.pool
    if step.resize is not None:
        entry["resize"] = step.resize
    return entry


def not_triggered_json(pod: NotTriggered) -> schemas.NotTriggeredJson:
    entry: schemas.NotTriggeredJson = {"pod": pod.pod, "reason": pod.reason}
    if pod.note is not None:
        entry["note"] = pod.note
    return entry


class _NewNodePart(TypedDict, total=False):
    new_node: dict[str, int | str]


def relief_json(r: Relief) -> schemas.ReliefJson:
    """The keys in the order they were always written: a new node (only when one is needed)
    before the advice."""
    new_node: dict[str, int | str] | None = None
    if r.moves and any(to is None for _, to in r.moves):
        new_node = {"gpus": 0, "cpu": cpu_text(r.cpu_milli), "memory": bytes_text(r.memory_bytes)}
    needs: _NewNodePart = {} if new_node is None else {"new_node": new_node}
    return {
        "pod": r.pod,
        "node": r.node,
        "short": list(r.short),
        "move": [{"pod": name, "to": to} for name, to in r.moves],
        **needs,
        "advice": r.text,
    }


def scale_down_json(step: ScaleDown) -> schemas.ScaleDownJson:
    entry: schemas.ScaleDownJson = {
        "node": step.node,
        "utilisation": round(step.utilisation, 4),
        "moves": {pod: {"node": p.node, "cards": list(p.cards)} for pod, p in step.moves.items()},
    }
    if step.also_moves is not None:
        entry["also_moves"] = list(step.also_moves)
    return entry


def held_node_json(held: HeldNode) -> schemas.HeldNodeJson:
    return {
        "node": held.node,
        "utilisation": round(held.utilisation, 4),
        "reason": held.reason,
        "detail": held.detail,
    }


def headroom_json(room: Headroom) -> schemas.HeadroomJson:
    return {
        "capacity_gpus": round(room.capacity_gpus, 3),
        "peak_allotted_gpus": round(room.peak_allotted_gpus, 3),
        "needed_gpus": room.needed_gpus,
        "spare_gpus": round(room.spare_gpus, 3),
        "target_utilisation": room.target_utilisation,
        "redundancy": room.redundancy,
        "peak_used_gpus": None if room.peak_used_gpus is None else round(room.peak_used_gpus, 3),
        "needed_by_use_gpus": room.needed_by_use_gpus,
    }
