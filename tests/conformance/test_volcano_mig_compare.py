"""The Volcano MIG-mode comparison (conformance/volcano_mig_compare.py): on an answer the
harness gave for a hand case (kept without Go), and on drawn cases through the harness."""

from __future__ import annotations

from typing import Any

import pytest

from conformance import harness
from conformance.volcano_mig_compare import advisor_side, compare, differences

# One H100 in mig mode, one group of two 1g.10gb: two pods fit, a third does not, the first
# leaves, and a small pod takes its instance again.
CASE: dict[str, Any] = {
    "factor": 1,
    "known": [{"models": ["H100"], "geometries": [
        {"group": "g1", "instances": [{"name": "1g.10gb", "memory": 10240, "count": 2}]}]}],
    "cards": [{"mode": "mig", "type": "NVIDIA H100"}],
    "card": 0,
    "ops": [{"add": 100}, {"add": 100}, {"add": 100}, {"sub": 0}, {"add": 5}],
}  # fmt: skip


def _step(fit: bool, at: str, used_mem: int, held: list[int]) -> dict[str, Any]:
    usage = [{"name": "1g.10gb", "used": held}]
    return {"fit": fit, "id": at, "used_mem": used_mem, "group": 0, "usage": usage}


# As conformance/volcano/migcards printed it for CASE (Volcano v1.15.1).
UPSTREAM: dict[str, Any] = {
    "mode": "mig",
    "groups": [["g1"]],
    "steps": [
        _step(True, "GPU-0[g1-0]", 10240, [0]),
        _step(True, "GPU-0[g1-1]", 20480, [0, 1]),
        _step(False, "", 20480, [0, 1]),
        _step(False, "", 10240, [1]),
        _step(True, "GPU-0[g1-0]", 20480, [0, 1]),
    ],
}


def test_the_advisor_agrees_with_the_harness_answer() -> None:
    assert differences(advisor_side(CASE), UPSTREAM) == []


def test_a_difference_is_named() -> None:
    moved = {**UPSTREAM, "steps": [*UPSTREAM["steps"][:4], _step(True, "GPU-0[g1-1]", 0, [])]}
    diffs = differences(advisor_side(CASE), moved)
    assert len(diffs) == 1
    assert diffs[0].startswith("step 4: advisor")
    assert differences(advisor_side(CASE), {**UPSTREAM, "mode": "hami-core"})[0].startswith(
        "mode: advisor mig"
    )


@pytest.mark.realservices  # the Go harness runs as a process
@pytest.mark.skipif(harness.go_missing() is not None, reason=str(harness.go_missing()))
@pytest.mark.timeout(900)  # a cold build compiles the vgpu package and client-go
def test_drawn_cases_agree() -> None:
    n, mig, steps, wrong = compare(300, 0)
    assert n == 300
    assert mig > 50
    assert steps > 300
    assert wrong == [], wrong[:3]
