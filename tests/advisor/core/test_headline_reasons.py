"""A fragmentation pod's headline names the check that refused it on the node with the room,
read from the same card verdicts as that node's reasons: HAMi's infer/chat-4 is refused for
the A10s' timeslicing slots and ml/train-numa for NUMA, not for memory (advisor/examples/
hami.yaml); Volcano's counterpart says vgpu-limit; a pod whose room is only split across
cards still reads as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.diagnosis import PodDiagnosis
from advisor.core.model import ProfileName
from advisor.scenario import load_scenario
from tests.advisor.core.scenario_dicts import GiB, build, node, running
from tests.realparts import REPO

EXAMPLES = sorted((REPO / "advisor" / "examples").glob("*.yaml"))
HAMI = REPO / "advisor" / "examples" / "hami.yaml"
# The node-level line, the memory checks and the health checks of the three profiles.
SPLIT_ONLY = {
    "too-few-cards",
    "AllocatedCardsInsufficientRequest",
    "card-memory",
    "CardInsufficientMemory",
    "unhealthy",
    "CardNotHealth",
}


def verdicts(path: Path, profile: ProfileName | None = None) -> dict[str, PodDiagnosis]:
    return {d.pod.name: d for d in diagnose(load_scenario(path, profile)).pods}


def deciding(d: PodDiagnosis) -> str:
    """What the headline says refused the pod: after "but "."""
    return d.message.rsplit(" cards, but ", 1)[1]


def test_hami_chat_is_refused_for_timeslicing_slots_not_memory() -> None:
    chat = verdicts(HAMI)["infer/chat-4"]
    assert chat.cause == "fragmentation"
    assert deciding(chat) == "CardTimeSlicingExhausted: cards 0, 1"
    assert dict(chat.node_reasons)["a10-node-1"] == ("CardTimeSlicingExhausted: cards 0, 1",)
    assert "MiB on each" not in chat.message
    assert "% of the card on each" not in chat.message


def test_hami_train_numa_is_refused_for_numa() -> None:
    numa = verdicts(HAMI)["ml/train-numa"]
    assert numa.cause == "fragmentation"
    assert deciding(numa) == "NumaNotFit: no 2 eligible cards on one NUMA node"
    assert dict(numa.node_reasons)["a100-node-1"][0] == deciding(numa)


def test_volcano_counterpart_names_the_vgpu_limit() -> None:
    chat = verdicts(HAMI, "volcano-vgpu")["infer/chat-4"]
    assert chat.cause == "fragmentation"
    assert deciding(chat) == "vgpu-limit: cards 0, 1"
    assert dict(chat.node_reasons)["a10-node-1"] == ("vgpu-limit: cards 0, 1",)


def test_a_split_of_memory_alone_reads_as_before() -> None:
    cluster = build(
        [node("n1", 16, 16)],
        [
            running("x/a", "n1", [0], 12),
            running("x/b", "n1", [1], 12),
            {"name": "x/p", "request": {"gpus": 1, "memory_mib": 8 * GiB}},
        ],
    )
    (p,) = diagnose(cluster).pods
    assert p.cause == "fragmentation"
    assert deciding(p) == "not 8192 MiB on each of 1 eligible cards"


@pytest.mark.parametrize("profile", ["cce", "hami", "volcano-vgpu"])
@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_headline_reason_is_among_the_nodes_reasons(example: Path, profile: str) -> None:
    """Every fragmentation headline's reason is one of its node's own reason lines, or the
    memory split when memory is all that refuses the node's cards."""
    for d in verdicts(example, profile).values():
        if d.cause != "fragmentation":
            continue
        said = deciding(d)
        name = d.message.rsplit(" has ", 1)[0].rsplit(" ", 1)[1]
        lines = dict(d.node_reasons)[name]
        if said.startswith("not "):  # the split: no check but memory (or health) refuses
            kinds = {line.split(":", 1)[0] for line in lines}
            assert kinds <= SPLIT_ONLY, (d.pod.name, lines)
        else:
            assert set(said.split("; ")) <= set(lines), (d.pod.name, said, lines)
