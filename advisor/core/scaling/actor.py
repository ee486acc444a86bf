"""Who adds the nodes scale-up advises, in words (docs/design.md §8).

Elsewhere the cluster-autoscaler acts on a Pending pod, and the advice says what it would
add. On CCE it does not: CCE's documents say its Autoscaler add-on does not scale xGPU
nodes, and that node-pool autoscaling with multi-card even split is not supported (its
results "cannot be controlled"). There each entry is the resize a person runs: the node
pool (the pool label of the shape's nodes), the count, the shape; and a pod no new node
would help is said to get no node from the add-on either way.
"""

from __future__ import annotations

from advisor.core.profiles.base import Profile
from advisor.core.scaling.templates import NodeShape
from advisor.words import plural

CCE_ADDON = (
    "CCE's Autoscaler add-on does not scale xGPU nodes, and CCE does not support node-pool "
    "autoscaling with multi-card even split: each count here is a resize a person runs"
)
CCE_NOT_TRIGGERED = (
    "CCE's Autoscaler add-on does not act for xGPU resources, and no new node would let it "
    "run either"
)


def pool_of(shape: NodeShape, profile: Profile) -> str | None:
    """The node pool the shape's nodes are in, where the profile knows the label."""
    label = profile.node_pool_label
    return dict(shape.labels).get(label) if label is not None else None


def resize_text(shape: NodeShape, nodes: int, new_shape: bool, profile: Profile) -> str:
    """The resize a person runs: add the nodes to the shape's pool; a new shape, or nodes
    in no pool (CCE's DefaultPool cannot be resized), need a pool of their own."""
    count = plural(nodes, "node")
    pool = None if new_shape else pool_of(shape, profile)
    if pool is not None:
        return f"by hand: add {count} to node pool {pool}"
    if new_shape:
        return f"by hand: create a node pool of this shape with {count}"
    label = profile.node_pool_label or "node pool"
    return (
        f"by hand: add {count} to the node pool of this shape (which one is not known: its "
        f"nodes carry no {label} label; nodes in none, CCE's DefaultPool, need a pool created)"
    )
