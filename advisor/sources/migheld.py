"""Which MIG instances a bound MIG pod holds (docs/design.md §13).

The exporter's `xgpu_mig_instance_pod_memory_used_bytes` names the instances a container's
processes use, so it says where a pod with GPU processes sits; the API does not (the
kubelet's PodResources API would, which the advisor does not read). Those instances are
taken first; the rest of each pod's ask is guessed: the first instances of its profile left
on its node, by card then slice, oldest pod first, so counts are right and geometry a guess,
said so. An attribution the model cannot use is warned, one line each, and ignored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from advisor.core.model import Node, Request
from advisor.sources.notes import Notes, names
from advisor.sources.series import series_name
from advisor.sources.values import MIG_POD, Sample
from advisor.words import plural

Instance = tuple[int, int]  # (card index, first memory slice)


@dataclass(frozen=True, slots=True, order=True)
class Attributed:
    """A MIG instance in which the exporter sees processes of a pod."""

    node: str
    card: int
    start: int
    pod: str  # "namespace/pod"

    @property
    def where(self) -> str:
        return f"MIG instance at node {self.node} card {self.card} slice {self.start}"


def attributed(samples: Iterable[Sample], notes: Notes) -> tuple[Attributed, ...]:
    """The pods' instances that fresh series name, once each (a pod's containers and a
    target's twins collapse). A series naming no pod or instance is warned and ignored; one
    without `node` is counted with the rest that lack it."""
    found: set[Attributed] = set()
    for s in samples:
        if s.metric != MIG_POD or not s.label("node"):
            continue
        index, start = s.label("gpu_index"), s.label("mig_start")
        if not (s.label("namespace") and s.label("pod") and _digits(index) and _digits(start)):
            shown = series_name(s.metric, s.labels)
            notes.warnings.append(f"{shown} names no pod or MIG instance; ignored")
            continue
        pod = f"{s.label('namespace')}/{s.label('pod')}"
        found.add(Attributed(s.label("node"), int(index), int(start), pod))
    return tuple(sorted(found))


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()  # isdigit alone takes "²", int() does not


# A bound MIG pod: its key, its node (a modelled one) and its request.
Bound = tuple[str, str, Request]


def held_instances(
    bound: Sequence[Bound], nodes: Sequence[Node], found: Iterable[Attributed], notes: Notes
) -> dict[str, tuple[Instance, ...]]:
    """Each bound pod's instances, by card then slice: those the exporter attributes to it,
    then the first of its profile left on its node, `bound` in order (oldest first). A pod
    that cannot get its ask is absent, warned."""
    pool: dict[tuple[str, str], list[Instance]] = defaultdict(list)
    for n in nodes:
        for card in n.cards:
            for inst in card.mig or ():
                pool[(n.name, inst.profile)].append((card.index, inst.start))
    held = _attributed_to(bound, nodes, found, notes)
    out: dict[str, tuple[Instance, ...]] = {}
    guessed: list[str] = []
    short: list[str] = []
    for key, node, request in bound:  # taken first, whatever the pods' order
        for instance in held.get(key, []):
            pool[(node, request.mig_profile)].remove(instance)
    for key, node, request in bound:
        have, free = held.get(key, []), pool[(node, request.mig_profile)]
        need = request.gpus - len(have)
        if len(free) < need:
            short.append(f"{key} on {node}")
            continue
        if need:
            guessed.append(key)
        taken, free[:] = free[:need], free[need:]
        out[key] = tuple(sorted([*have, *taken]))
    if guessed:
        notes.warnings.append(
            "which MIG instance each pod holds is not reported where it runs no GPU process: "
            f"{names(guessed)} given the first of their profile by card, then slice"
        )
    if short:
        notes.warnings.append(
            "pods bound to MIG instances the exporter does not list (left out, their cards look "
            f"freer than they are): {names(short)}"
        )
    return out


def _attributed_to(
    bound: Sequence[Bound], nodes: Sequence[Node], found: Iterable[Attributed], notes: Notes
) -> dict[str, list[Instance]]:
    """The attributions the model can use, per pod: an instance it has, of the pod's
    profile, named for that pod alone, the pod bound there as a MIG pod, at most its ask
    (the first by card, then slice). Each other one is one warning line, and ignored: its
    instance stays free for the guesses."""
    profiles = {
        (n.name, card.index, inst.start): inst.profile
        for n in nodes
        for card in n.cards
        for inst in card.mig or ()
    }
    asks = {key: (node, request) for key, node, request in bound}
    users: dict[tuple[str, int, int], list[Attributed]] = defaultdict(list)
    for a in sorted(set(found)):
        users[(a.node, a.card, a.start)].append(a)
    held: dict[str, list[Instance]] = defaultdict(list)
    for place, seen in users.items():
        a = seen[0]
        if len(seen) > 1:  # which of them holds it cannot be told
            pods = names(b.pod for b in seen)
            notes.warnings.append(f"{a.where}: the exporter sees pods {pods} use it; ignored")
            continue
        node, request = asks.get(a.pod, ("", None))
        profile = profiles.get(place)
        if profile is None:
            why = "the model has no such instance"
        elif request is None or node != a.node:
            why = f"{a.pod} is no MIG pod bound to node {a.node}"
        elif profile != request.mig_profile:
            why = f"it is a {profile} instance and {a.pod} asks {request.mig_profile}"
        elif len(held[a.pod]) == request.gpus:
            why = f"{a.pod} asks only {plural(request.gpus, 'instance')}"
        else:
            held[a.pod].append((a.card, a.start))
            continue
        said = f"{a.where}: the exporter sees pod {a.pod} use it, but {why}; ignored"
        notes.warnings.append(said)
    return held
