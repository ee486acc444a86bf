"""`python -m exporter.backfill`: one pod's simulated series at past instants, in OpenMetrics
that promtool reads, with the values the simulated exporter's reader gives at those instants."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from advisor.demo import DEFAULT_SCENARIO
from advisor.scenario import load_scenario
from exporter.allotments import Allotment
from exporter.backfill import backfill, main
from exporter.scenario_pods import allotments_from_cluster
from exporter.simulate import MIB, SimulatedReader

NODE, POD = "a100-node-1", "infer/embed-0"
TIMES = [1_764_800_000.0 + 60 * i for i in range(5)]


def test_each_instant_is_what_the_simulated_reader_reads_then() -> None:
    body = backfill(DEFAULT_SCENARIO, NODE, POD, TIMES, {"job": "xgpu-exporter", "node": NODE})
    parsed = text_string_to_metric_families(body.decode())  # type: ignore[no-untyped-call]
    families = {f.name: f for f in parsed}
    used = families["xgpu_memory_used"].samples
    assert [float(s.timestamp) for s in used] == TIMES
    assert {(s.labels["namespace"], s.labels["pod"], s.labels["node"]) for s in used} == {
        ("infer", "embed-0", NODE)
    }
    cluster = load_scenario(DEFAULT_SCENARIO)
    node = next(n for n in cluster.nodes if n.name == NODE)
    allotments: tuple[Allotment, ...] = allotments_from_cluster(cluster, NODE)
    mine = next(i for i, a in enumerate(allotments) if f"{a.namespace}/{a.pod}" == POD)
    for sample in used:
        at = float(sample.timestamp)
        reader = SimulatedReader(node, lambda: allotments, clock=functools.partial(float, at))
        reading = reader.read()
        process = next(p for p in reading.processes if p.pid == 100_000 + mine)
        assert sample.value == process.memory_used_bytes
        assert sample.value % MIB == 0
    (total,) = {s.value for s in families["xgpu_memory_total"].samples}
    assert total == 24576 * MIB


def test_a_pod_the_node_does_not_run_is_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "series.om"
    argv = ["--simulate", str(DEFAULT_SCENARIO), "--node", NODE, "--pod", "ml/none"]
    assert main([*argv, "--start", "0", "--end", "120", "--output", str(out)]) == 2
    err = capfd.readouterr().err
    assert err == f"xgpu-backfill: error: {DEFAULT_SCENARIO}: no vGPU of ml/none on {NODE}\n"
    assert not out.exists()
