"""A live node's MIG facts from the GPU operator's node labels (docs/design.md §13): the
device plugin's strategy (`nvidia.com/mig.strategy`), and whether mig-manager is still
applying the configuration the node's `nvidia.com/mig.config` names
(`nvidia.com/mig.config.state`, which mig-manager sets to pending, rebooting where needed,
then success or failed: NVIDIA/mig-parted deployments/gpu-operator/reconfigure-mig.sh), in
which case the instances read now may soon change: said."""

from __future__ import annotations

from dataclasses import replace

from advisor.core.mig_partition import MIG_CONFIG_LABEL
from advisor.core.model import Node
from advisor.sources.notes import Notes

MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"


def mig_node(node: Node, notes: Notes) -> Node:
    """The node with its device plugin's strategy; a MIG configuration still being applied
    (or failed) is warned."""
    state = node.labels.get(MIG_CONFIG_STATE_LABEL)
    if state is not None and state != "success":
        config = node.labels.get(MIG_CONFIG_LABEL, "?")
        notes.warnings.append(
            f"node {node.name}: {MIG_CONFIG_STATE_LABEL}={state} ({MIG_CONFIG_LABEL}={config}): "
            "mig-manager has not applied the configuration; the MIG instances modelled may "
            "change"
        )
    return _with_strategy(node, notes)


MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"  # the GPU operator's device plugin sets it


def _with_strategy(node: Node, notes: Notes) -> Node:
    """A node with MIG cards gets its device plugin's strategy from the node label; without
    one that the model reads (single with every card alike, or mixed), mixed, said so."""
    migs = [c for c in node.cards if c.mig is not None]
    if not migs:
        return node
    label = node.labels.get(MIG_STRATEGY_LABEL)
    profiles = {i.profile for c in migs for i in c.mig or ()}
    alike = len(migs) == len(node.cards) and len(profiles) <= 1
    if label == "single" and alike:
        return replace(node, mig_strategy="single")
    if label == "mixed":
        return replace(node, mig_strategy="mixed")
    if label is None:
        problem = f"no {MIG_STRATEGY_LABEL} label"
    elif label == "single":
        problem = f"{MIG_STRATEGY_LABEL}=single, but its cards are not all partitioned alike"
    else:
        problem = f"{MIG_STRATEGY_LABEL}={label!r}"
    notes.warnings.append(f"node {node.name}: MIG cards and {problem}; modelled as mixed")
    return replace(node, mig_strategy="mixed")
