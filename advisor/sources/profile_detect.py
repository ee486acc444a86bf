"""Which scheduler profile a live cluster runs (`--scheduler auto`), and its settings.

Each scheduler writes its own allocation annotation on every pod it places: CCE's
`volcano.sh/gpu-index`, HAMi's `hami.io/vgpu-devices-allocated`, Volcano vGPU's
`volcano.sh/vgpu-ids-new`. The placed pods carrying them name the profile. A cluster with no
placed GPU pod yet falls back to the nodes' card registrations (`hami.io/node-nvidia-register`,
`volcano.sh/node-vgpu-register`), then to cce. Two schedulers' marks at once cannot be
modelled as one cluster: that is an input error naming both, and `--scheduler` decides.

The marks are each profile's (`Profile.allocation_annotation`, `registration_annotation`).
The policies and the vGPU limit are scheduler settings no source shows: what the user gave,
else the profile's defaults.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from advisor.core.model import Policy, PolicyName, ProfileName, Scheduler
from advisor.core.profiles import DEFAULT_PROFILE, PROFILES
from advisor.errors import InputError
from advisor.scenario.profile import defaults
from advisor.sources.values import KubeState

SchedulerChoice = str  # "auto" or a profile's name
AUTO = "auto"


def scheduler_choices() -> tuple[str, ...]:
    return (AUTO, *PROFILES)


def allocation_signals() -> tuple[tuple[str, ProfileName], ...]:
    """The annotation each scheduler writes on a pod it places, and the profile it names."""
    return tuple(
        (p.allocation_annotation, p.name)
        for p in PROFILES.values()
        if p.allocation_annotation is not None
    )


def registration_signals() -> tuple[tuple[str, ProfileName], ...]:
    """The card registration each scheduler's device plugin writes on a node."""
    return tuple(
        (p.registration_annotation, p.name)
        for p in PROFILES.values()
        if p.registration_annotation is not None
    )


@dataclass(frozen=True, slots=True)
class Detected:
    profile: ProfileName
    evidence: str  # why, for a note: "hami.io/vgpu-devices-allocated on 3 pods"


def detect_profile(kube: KubeState | None) -> Detected:
    """The profile the cluster's own marks name; InputError when they name several."""
    if kube is None:
        return Detected(DEFAULT_PROFILE, "no Kubernetes source to read allocation annotations from")
    placed = ((pod.key, pod.annotations.keys()) for pod in kube.pods if pod.node and pod.namespace)
    found = _signals(placed, allocation_signals(), "pods")
    if found is None:
        nodes = ((node.name, node.registrations.keys()) for node in kube.nodes)
        found = _signals(nodes, registration_signals(), "nodes")
    return found or Detected(
        DEFAULT_PROFILE, "no pod or node carries another scheduler's annotation"
    )


def _signals(
    holders: Iterable[tuple[str, Iterable[str]]],
    signals: tuple[tuple[str, ProfileName], ...],
    what: str,
) -> Detected | None:
    carriers: dict[str, list[str]] = defaultdict(list)  # annotation -> holders, sorted later
    for name, keys in holders:
        present = set(keys)
        for annotation, _ in signals:
            if annotation in present:
                carriers[annotation].append(name)
    if not carriers:
        return None
    named = dict(signals)
    ranked = sorted(carriers, key=lambda a: (-len(carriers[a]), a))
    if len(ranked) > 1:
        parts = [f"{a} ({named[a]}, e.g. {min(carriers[a])})" for a in ranked]
        listed = " and ".join(parts) if len(parts) == 2 else ", ".join(parts[:-1])
        if len(parts) > 2:
            listed += f" and {parts[-1]}"
        raise InputError(
            f"--scheduler auto: {what} carry {'both ' if len(parts) == 2 else ''}{listed}; "
            "pass --scheduler to choose"
        )
    (annotation,) = ranked
    count = len(carriers[annotation])
    return Detected(
        named[annotation], f"{annotation} on {count} {what[:-1] if count == 1 else what}"
    )


def choose_profile(choice: str | None, kube: KubeState | None) -> Detected:
    """THE entry point for `--scheduler` on a live source: auto (or None) detects, a profile
    name is taken as given; InputError (exit 2) for anything else or mixed signals."""
    if choice is None or choice == AUTO:
        return detect_profile(kube)
    if choice in PROFILES:
        return Detected(choice, "--scheduler")
    raise InputError(
        f"--scheduler: expected one of {', '.join(scheduler_choices())}, got {choice!r}"
    )


def scheduler_settings(
    profile: ProfileName,
    node_policy: PolicyName | None = None,
    card_policy: PolicyName | None = None,
    max_vgpus_per_card: int | None = None,
) -> tuple[Scheduler, Policy, int]:
    """The profile's scheduler, policy and vGPU limit: the user's values where given (None:
    the profile's default); InputError for a card policy the profile does not have."""
    default, card_policies, limit = defaults(profile)
    card = card_policy or default.card
    if card not in card_policies:
        raise InputError(
            f"--card-policy {card} is not a card policy of {profile} "
            f"(one of {', '.join(card_policies)})"
        )
    if node_policy == "legacy":
        raise InputError("--node-policy legacy: legacy is a card order of volcano-vgpu only")
    chosen = max_vgpus_per_card if max_vgpus_per_card is not None else limit
    return Scheduler(profile), Policy(node_policy or default.node, card), chosen
