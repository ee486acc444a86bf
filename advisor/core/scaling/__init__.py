"""Scaling advice, like the cluster-autoscaler's: nodes to add for what stays Pending, idle
nodes that could go, and the GPUs the cluster needs at its peak.

- `advice`: scale-up and scale-down of one run, after its rebalancing plans;
- `up`: scale-up (the estimator, then the whole queue checked on the nodes added);
- `down`: scale-down (the removal check, and why each idle node kept is kept);
- `relief`: what frees the cpu or memory of a pod short only of those (never a GPU node);
- `templates`: the node group templates and the filters a new node would pass;
- `mig_up`: scale-up for MIG pods (templates whose MIG cards offer their profile);
- `others`: where a node's non-GPU pods would go (scale-down and relief both move them);
- `headroom`: the GPUs needed at the observed peak.
"""

from __future__ import annotations

from advisor.core.scaling.advice import plan_outcome, pod_remedies, scaling_advice
from advisor.core.scaling.down import HeldNode, ScaleDown, ScaleDownAdvice, scale_down_advice
from advisor.core.scaling.headroom import (
    Headroom,
    allotted_gpus,
    capacity_gpus,
    gpus_needed,
    headroom,
)
from advisor.core.scaling.relief import Relief
from advisor.core.scaling.templates import NodeShape, NotTriggered, node_shapes
from advisor.core.scaling.up import (
    ScaleUp,
    ScaleUpAdvice,
    estimate_nodes,
    scale_up,
    scale_up_advice,
    with_new_nodes,
)

__all__ = [
    "Headroom",
    "HeldNode",
    "NodeShape",
    "NotTriggered",
    "Relief",
    "ScaleDown",
    "ScaleDownAdvice",
    "ScaleUp",
    "ScaleUpAdvice",
    "allotted_gpus",
    "capacity_gpus",
    "estimate_nodes",
    "gpus_needed",
    "headroom",
    "node_shapes",
    "plan_outcome",
    "pod_remedies",
    "scale_down_advice",
    "scale_up",
    "scale_up_advice",
    "scaling_advice",
    "with_new_nodes",
]
