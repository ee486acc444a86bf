"""Which MIG instance a bound MIG pod holds (docs/design.md §13): the exporter's
`xgpu_mig_instance_pod_memory_used_bytes` names the instances a container's processes use;
those are taken first, the rest guessed (the first of the profile left, by card then slice,
oldest pod first); an attribution the model cannot use is warned, one line each, ignored."""

from __future__ import annotations

from advisor.core.model import Pod, Request
from advisor.podspec import PodGpu
from advisor.podspec.node import NodeScheduling
from advisor.sources.assemble import assemble
from advisor.sources.mignodes import MIG_STRATEGY_LABEL
from advisor.sources.values import MIB, MIG_POD, KubeNode, KubeState, Sample
from tests.advisor.sources.builders import node_info, parsed, pod_card_labels
from tests.advisor.sources.test_assemble import loads
from tests.advisor.sources.test_assemble_mig import MIXED, _gpu_pod, _mig_card, _mig_pod

ONE = "1g.5gb"
GUESS = "which MIG instance each pod holds is not reported where it runs no GPU process: "
GUESS_END = " given the first of their profile by card, then slice"
# Card 0: four 1g.5gb (slices 0..3) and a 3g.20gb at 4; card 1: two 1g.5gb and a 3g.20gb.
CARD_0 = ((ONE, 0), (ONE, 1), (ONE, 2), (ONE, 3), ("3g.20gb", 4))
CARD_1 = ((ONE, 0), (ONE, 1), ("3g.20gb", 4))


def _use(
    node: str, index: int, start: int, pod: str, profile: str = ONE, container: str = "main"
) -> Sample:
    """The exporter's series: the container's processes use this instance."""
    labels = {
        **pod_card_labels(node, pod, index, container),
        "GPU_I_ID": str(start + 1),
        "GPU_I_PROFILE": profile,
        "mig_start": str(start),
    }
    return Sample(MIG_POD, labels, 512.0 * MIB)


def _cards(node: str = "m") -> list[Sample]:
    return [node_info(node), *_mig_card(node, 0, *CARD_0), *_mig_card(node, 1, *CARD_1)]


def _bound(key: str, n: int = 1, hour: int = 10, node: str = "m") -> PodGpu:
    return parsed(_mig_pod(key, ONE, n, node=node, created=f"2024-05-01T{hour:02}:00:00Z"))


def _kube(*pods: PodGpu, nodes: tuple[str, ...] = ("m",)) -> KubeState:
    kube_nodes = tuple(KubeNode(n, scheduling=NodeScheduling(labels=MIXED)) for n in nodes)
    return KubeState("k", pods, kube_nodes)


def _held(pods: tuple[Pod, ...]) -> dict[str, tuple[tuple[int, int], ...]]:
    return {p.name: p.mig_instances for p in pods if p.mig_instances}


def _mig_warnings(warnings: tuple[str, ...]) -> list[str]:
    """The attribution and guess lines (an unreadable series' line is checked apart)."""
    return [w for w in warnings if "MIG instance" in w and not w.startswith(MIG_POD)]


def test_attributed_pods_hold_the_named_instances_not_the_first() -> None:
    """ml/a and ml/c hold what the exporter names (ml/c's two containers in one instance
    are one use); ml/b, with no GPU process, takes the first 1g.5gb left, and only it is
    named in the guess warning."""
    samples = [
        *_cards(),
        _use("m", 0, 3, "ml/a"),
        _use("m", 1, 1, "ml/c", container="x"),
        _use("m", 1, 1, "ml/c", container="y"),
        _use("m", 0, 2, "ml/c"),
    ]
    kube = _kube(_bound("ml/a", hour=9), _bound("ml/b", hour=10), _bound("ml/c", 2, hour=11))
    result = assemble(samples, kube)
    by_name = {p.name: p for p in result.cluster.pods}
    assert _held(result.cluster.pods) == {
        "ml/a": ((0, 3),),
        "ml/b": ((0, 0),),
        "ml/c": ((0, 2), (1, 1)),
    }
    c = by_name["ml/c"]
    assert c.placement is not None
    assert c.placement.cards == (0, 1)
    assert c.request == Request(gpus=2, memory_mib=0, mig_profile=ONE)
    assert _mig_warnings(result.warnings) == [f"{GUESS}ml/b{GUESS_END}"]
    loads(result.cluster)


def test_with_every_pod_attributed_nothing_is_guessed() -> None:
    samples = [*_cards(), _use("m", 1, 0, "ml/a"), _use("m", 0, 1, "ml/b")]
    result = assemble(samples, _kube(_bound("ml/a"), _bound("ml/b", hour=11)))
    assert _held(result.cluster.pods) == {"ml/a": ((1, 0),), "ml/b": ((0, 1),)}
    assert _mig_warnings(result.warnings) == []


def test_a_partly_attributed_pod_gets_the_rest_guessed_after_every_attribution() -> None:
    """ml/p asks three and the exporter names one (card 1, slice 0). Attributed instances
    leave the pool before any guess: ml/q, older and unattributed, takes card 0's first,
    ml/p the next two, never its own named one twice nor ml/r's."""
    samples = [*_cards(), _use("m", 1, 0, "ml/p"), _use("m", 0, 1, "ml/r")]
    kube = _kube(_bound("ml/q", hour=8), _bound("ml/p", 3, hour=9), _bound("ml/r", hour=12))
    result = assemble(samples, kube)
    assert _held(result.cluster.pods) == {
        "ml/q": ((0, 0),),
        "ml/p": ((0, 2), (0, 3), (1, 0)),
        "ml/r": ((0, 1),),
    }
    assert _mig_warnings(result.warnings) == [f"{GUESS}ml/p, ml/q{GUESS_END}"]
    loads(result.cluster)


def test_attributions_the_model_cannot_use_are_warned_and_ignored() -> None:
    """One line each, and the read goes on: no such instance (a start no instance takes, a
    card the node lacks), another profile, one instance named for two pods, a pod not bound
    there (unknown to Kubernetes, bound to another node), more than the pod asks (the first
    by card, then slice, kept). Ignored instances stay free for the guesses."""
    samples = [
        *_cards(),
        *_cards("o"),
        _use("m", 0, 5, "ml/a"),  # slice 5 is inside the 3g.20gb at 4
        _use("m", 7, 0, "ml/a"),  # no card 7
        _use("m", 0, 4, "ml/b", profile="3g.20gb"),  # ml/b asks 1g.5gb
        _use("m", 0, 1, "ml/b"),  # ... and ml/c says so too
        _use("m", 0, 1, "ml/c"),
        _use("m", 1, 0, "ml/z"),  # unknown to Kubernetes
        _use("m", 1, 1, "ml/o"),  # bound to o
        _use("m", 0, 2, "ml/d"),  # ml/d asks one: card 0 slice 2 kept, slice 3 not
        _use("m", 0, 3, "ml/d"),
        _unlabelled(),  # names no pod
    ]
    pods = (
        _bound("ml/a", hour=8),
        _bound("ml/b", hour=9),
        _bound("ml/c", hour=10),
        _bound("ml/d", hour=11),
        _bound("ml/o", node="o"),
    )
    result = assemble(samples, _kube(*pods, nodes=("m", "o")))
    said = "the exporter sees pod"
    assert _mig_warnings(result.warnings) == [
        "MIG instance at node m card 0 slice 1: the exporter sees pods ml/b, ml/c use it; ignored",
        f"MIG instance at node m card 0 slice 3: {said} ml/d use it, but ml/d asks only 1 "
        "instance; ignored",
        f"MIG instance at node m card 0 slice 4: {said} ml/b use it, but it is a 3g.20gb "
        "instance and ml/b asks 1g.5gb; ignored",
        f"MIG instance at node m card 0 slice 5: {said} ml/a use it, but the model has no such "
        "instance; ignored",
        f"MIG instance at node m card 1 slice 0: {said} ml/z use it, but ml/z is no MIG pod "
        "bound to node m; ignored",
        f"MIG instance at node m card 1 slice 1: {said} ml/o use it, but ml/o is no MIG pod "
        "bound to node m; ignored",
        f"MIG instance at node m card 7 slice 0: {said} ml/a use it, but the model has no such "
        "instance; ignored",
        f"{GUESS}ml/a, ml/b, ml/c, ml/o{GUESS_END}",
    ]
    (unusable,) = [w for w in result.warnings if "names no pod or MIG instance" in w]
    assert unusable.startswith(f"{MIG_POD}{{")
    # ml/d keeps its one; the rest take the first left, oldest first, slice 1 among them
    assert _held(result.cluster.pods) == {
        "ml/a": ((0, 0),),
        "ml/b": ((0, 1),),
        "ml/c": ((0, 3),),
        "ml/d": ((0, 2),),
        "ml/o": ((0, 0),),
    }
    loads(result.cluster)


def _unlabelled() -> Sample:
    labels = {**_use("m", 0, 0, "ml/e").labels, "pod": "", "mig_start": ""}
    return Sample(MIG_POD, labels, 512.0 * MIB)


def test_a_single_strategy_nvidia_gpu_pod_holds_its_named_instance() -> None:
    """Under the single strategy a pod asking `nvidia.com/gpu` is a MIG pod of the node's
    profile: its attribution holds as a mixed node's does."""
    halves = (("3g.20gb", 0), ("3g.20gb", 4))
    samples = [
        node_info("s"),
        *_mig_card("s", 0, *halves),
        *_mig_card("s", 1, *halves),
        _use("s", 1, 4, "ml/a", profile="3g.20gb"),
    ]
    single = NodeScheduling(labels={MIG_STRATEGY_LABEL: "single"})
    pods = (parsed(_gpu_pod("ml/a", 1, node="s")), parsed(_gpu_pod("ml/b", 1, node="s")))
    result = assemble(samples, KubeState("k", pods, (KubeNode("s", scheduling=single),)))
    by_name = {p.name: p for p in result.cluster.pods}
    assert by_name["ml/a"].request == Request(gpus=1, memory_mib=0, mig_profile="3g.20gb")
    assert _held(result.cluster.pods) == {"ml/a": ((1, 4),), "ml/b": ((0, 0),)}
    assert _mig_warnings(result.warnings) == [f"{GUESS}ml/b{GUESS_END}"]
    loads(result.cluster)


def test_without_kubernetes_attributions_are_not_read() -> None:
    """MIG pods come from Kubernetes: alone, the exporter's attributions place nothing."""
    result = assemble([*_cards(), _use("m", 0, 0, "ml/a")])
    assert result.cluster.pods == ()
    assert _mig_warnings(result.warnings) == []
