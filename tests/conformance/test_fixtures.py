"""The suite's own scenarios through both sides (conformance/fixtures.py): the recorder, and
a sample of the suite's tests recorded and compared (with Go on PATH; skipped without)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.scenario import ScenarioError, scenario_from_data
from conformance import fixtures, harness
from conformance.session_compare import EXPLAINED
from tests.scenario_recorder import install

NODE = {"name": "n", "cards": [{"index": 0, "memory_mib": 1000}]}
VALID = {"scheduler": {"profile": "hami"}, "nodes": [NODE], "pods": []}


def test_the_recorder_writes_each_scenario_the_reader_accepts_once(tmp_path: Path) -> None:
    stop = install(tmp_path)
    try:
        scenario_from_data(VALID, "a")
        scenario_from_data(json.loads(json.dumps(VALID)), "b")  # the same content
        with pytest.raises(ScenarioError):
            scenario_from_data({"nodes": [NODE], "pods": [{"name": 3}]}, "bad")
    finally:
        stop()
    scenario_from_data({**VALID, "pods": [{"name": "ns/p", "request": {"gpus": 1}}]}, "after")
    (path,) = tmp_path.iterdir()
    assert json.loads(path.read_text()) == VALID


def test_run_each_halves_a_failing_batch_down_to_the_scenario_that_fails() -> None:
    """Eight scenarios, the sixth failing a side: every other keeps its result, the sixth
    gives its reason, and the batches run are a bisection's, not every scenario alone."""
    runs: list[int] = []

    def run(datas: list[dict[str, Any]]) -> list[fixtures.Result]:
        runs.append(len(datas))
        if any(d["i"] == 5 for d in datas):
            raise ValueError("/tmp/x/cluster-3.json: no such key\nmore")
        return [fixtures.Result(d["i"], d["i"], []) for d in datas]

    out = fixtures.run_each(run, [{"i": i} for i in range(8)])
    assert out[:5] + out[6:] == [fixtures.Result(i, i, []) for i in (0, 1, 2, 3, 4, 6, 7)]
    assert out[5] == "ValueError: no such key"
    assert runs == [8, 4, 4, 2, 1, 1, 2]  # halves of the failing half, each once
    assert fixtures.run_each(run, []) == []


def test_each_comparison_reads_mig_its_own_way_and_a_scenario_it_empties_leaves(
    tmp_path: Path,
) -> None:
    """Kept for kube-scheduler's comparisons under the mixed strategy, gone for Volcano's;
    a scenario left with no node leaves that comparison only."""
    mig = {"name": "m", "mig_strategy": "mixed", "cards": [{"index": 0, "mig": {}}]}
    (tmp_path / "a.json").write_text(json.dumps({"nodes": [mig, NODE], "pods": []}))
    (tmp_path / "b.json").write_text(json.dumps({"nodes": [mig]}))
    named = fixtures.load(tmp_path)
    assert named == [("a", {"nodes": [mig, NODE], "pods": []}), ("b", {"nodes": [mig], "pods": []})]
    reads = {title: read for title, _, _, read in fixtures.COMPARISONS}
    assert fixtures.as_read(named, reads["kube-scheduler filters"]) == named
    volcano = reads["Volcano v1.15.1's vGPU device code"]
    assert fixtures.as_read(named, volcano) == [("a", {"nodes": [NODE], "pods": []})]


def test_only_a_session_without_allocate_has_its_group_states_explained() -> None:
    lines = [
        "group ml/job: advisor admitted, upstream not-admitted",
        "reached ml/a: advisor True, upstream False",
        "ml/a: placed n1",
        "cause ml/a: advisor nodes (capacity), upstream gang",
    ]
    reclaim = {"scheduler": {"profile": "volcano-vgpu", "actions": ["reclaim"]}}
    explained = fixtures._unallocated(reclaim, lines)
    # a pod's placement and record: still counted
    assert explained == [*(f"{EXPLAINED}no allocate: {d}" for d in lines[:2]), *lines[2:]]
    for scheduler in ({"actions": ["enqueue", "allocate"]}, {"profile": "volcano-vgpu"}):
        assert fixtures._unallocated({"scheduler": scheduler}, lines) == lines


# Test modules whose scenarios cover the profiles and the comparisons (kube filters for all,
# Volcano's cards and session for volcano-vgpu, DefaultPreemption for hami).
SAMPLE = (
    "tests/advisor/test_scenario_jobs.py",
    "tests/advisor/test_examples_hami.py",
    "tests/advisor/test_examples_training.py",
    "tests/advisor/core/test_preemption_select_upstream.py",
)


@pytest.mark.realservices  # the recorder runs the sample's tests in a process; Go harnesses
@pytest.mark.skipif(harness.go_missing() is not None, reason=str(harness.go_missing()))
@pytest.mark.timeout(900)  # a cold build of the harnesses
def test_a_sample_of_the_suites_scenarios_agrees(tmp_path: Path) -> None:
    fixtures.record(tmp_path, SAMPLE, workers=0, markers="not realservices and not slow")
    named = fixtures.load(tmp_path)
    assert len(named) > 10
    lines = fixtures.report(named, None)
    agreement = [line for line in lines if line.startswith("agreement: ")]
    assert len(agreement) == len(fixtures.COMPARISONS)
    for line in agreement:
        agree, pods = line.split()[1].split("/")
        assert agree == pods, "\n".join(lines)
        assert int(pods) > 0, line
    assert not [line for line in lines if line.startswith("  ") and "not read" not in line]
