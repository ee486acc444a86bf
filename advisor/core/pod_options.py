"""Per-pod scheduling options a profile reads from the pod's annotations (HAMi v2.10).

HAMi lets a pod override the cluster's node and card policies, ask that all its cards share
one NUMA node, and reweight the card score. They are part of a pod's `Shape`, since two pods
that differ in them are placed differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from advisor.core.model import PolicyName

NODE_POLICY = "hami.io/node-scheduler-policy"
CARD_POLICY = "hami.io/gpu-scheduler-policy"
NUMA_BIND = "nvidia.com/numa-bind"
SCORING_WEIGHTS = "hami.io/device-scoring-weights"


@dataclass(frozen=True, slots=True)
class PodOptions:
    node_policy: PolicyName | None = None
    card_policy: PolicyName | None = None
    numa_bind: bool = False
    weights: tuple[int, int, int] | None = None  # slot, core, memory
    problem: str | None = None  # an annotation HAMi would refuse the pod for


NO_OPTIONS = PodOptions()


def hami_options(annotations: Mapping[str, str]) -> PodOptions:
    """The HAMi annotations of a pod, read as HAMi v2.10 reads them: a node policy other than
    "spread" is binpack (NodeScoreList.Less), a card policy other than "binpack" is spread
    (DeviceUsageList.Less; HAMi's comma chains, "numa", "mutex" and "topology-aware" are not
    modelled and read as spread too), numa-bind is Go's strconv.ParseBool, and a malformed
    scoring-weights annotation makes HAMi refuse the pod."""
    if not any(k in annotations for k in (NODE_POLICY, CARD_POLICY, NUMA_BIND, SCORING_WEIGHTS)):
        return NO_OPTIONS
    node_policy: PolicyName | None = None
    if NODE_POLICY in annotations:
        node_policy = "spread" if annotations[NODE_POLICY] == "spread" else "binpack"
    card_policy: PolicyName | None = None
    if CARD_POLICY in annotations:
        card_policy = "binpack" if annotations[CARD_POLICY] == "binpack" else "spread"
    weights, problem = None, None
    if SCORING_WEIGHTS in annotations:
        weights, error = parse_weights(annotations[SCORING_WEIGHTS])
        if error:
            problem = f"annotation {SCORING_WEIGHTS}: {error}"
    return PodOptions(
        node_policy=node_policy,
        card_policy=card_policy,
        numa_bind=annotations.get(NUMA_BIND) in _GO_TRUE,
        weights=weights,
        problem=problem,
    )


_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # strconv.ParseBool


def parse_weights(value: str) -> tuple[tuple[int, int, int] | None, str | None]:
    """ "slot=1,core=1,memory=3" as HAMi's ParseDeviceScoringWeights reads it: all three
    keys once each, non-negative integers, at least one positive."""
    parts = value.split(",")
    if len(parts) != 3:
        return None, f"{value!r}: expected slot, core and memory weights"
    found: dict[str, int] = {}
    for part in parts:
        key, sep, number = part.strip().partition("=")
        key, number = key.strip(), number.strip()
        if not sep:
            return None, f"{value!r}: expected key=value entries"
        if key not in ("slot", "core", "memory"):
            return None, f"{value!r}: unknown weight {key!r}"
        if key in found:
            return None, f"{value!r}: duplicate {key!r} weight"
        if not number.lstrip("+-").isascii() or not number.lstrip("+-").isdigit():
            return None, f"{value!r}: {key!r} weight must be an integer"
        weight = int(number)
        if weight < 0 or weight > 2**31:
            return None, f"{value!r}: {key!r} weight must be between 0 and 2147483648"
        found[key] = weight
    if not any(found.values()):
        return None, f"{value!r}: at least one weight must be positive"
    return (found["slot"], found["core"], found["memory"]), None
