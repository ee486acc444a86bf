"""The openb trace reader against hostile CSV: a byte-order mark, rows twice, huge or
non-ASCII gpu counts, missing or empty columns, broken quoting, NUL bytes.

`read_trace` returns a trace or raises one TraceError line naming the file and line; the
CLI's `replay --write-scenario` exits 0 or 2 with one line, and the scenario it writes reads
back to the end state it replayed.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor import cli
from advisor.core.model import Policy, Scheduler
from advisor.defaults import RESOURCE_MODES
from advisor.replay import TraceError, read_trace
from advisor.scenario import load_scenario, scenario_to_data
from tests.fuzz.hostile import (
    ADVISOR_ERROR,
    assert_clean_exit,
    assert_one_line,
    hostile_texts,
    run_main,
)
from tests.fuzz.profiles import fuzz_settings

pytestmark = pytest.mark.fuzz

NODE_COLUMNS = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
POD_COLUMNS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trace-fuzz")


def cell(good: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Mostly a good value, sometimes a hostile one."""
    return st.one_of(good, good, good, hostile_texts())


def node_rows() -> st.SearchStrategy[list[list[str]]]:
    row = st.tuples(
        cell(st.sampled_from(["n1", "n2", "n3", "n4"])),
        cell(st.integers(0, 96_000).map(str)),
        cell(st.integers(0, 2**20).map(str)),
        cell(st.sampled_from(["0", "1", "2", "8", "50000000", "²", "64", "65"])),
        cell(st.sampled_from(["T4", "V100M16", "", "A100"])),
    ).map(list)
    return st.lists(row, min_size=0, max_size=5)


def pod_rows() -> st.SearchStrategy[list[list[str]]]:
    row = st.tuples(
        cell(st.sampled_from([f"p{i}" for i in range(6)])),
        cell(st.integers(0, 32_000).map(str)),
        cell(st.integers(0, 2**16).map(str)),
        cell(st.sampled_from(["0", "1", "2", "8", "64", "99999999999999999999"])),
        cell(st.sampled_from(["0", "50", "125", "500", "1000", "1001", "٥٠٠"])),
        cell(st.sampled_from(["", "0", "100", "1e3", "10000000000000000"])),
    ).map(list)
    return st.lists(row, min_size=0, max_size=8)


@st.composite
def csv_text(draw: st.DrawFn, columns: list[str], rows: st.SearchStrategy[list[list[str]]]) -> str:
    header = list(columns)
    if draw(st.booleans()) and draw(st.booleans()):
        header.pop(draw(st.integers(0, len(header) - 1)))  # a column missing
    body = draw(rows)
    if draw(st.booleans()) and len(body) > 0:
        body.append(list(body[draw(st.integers(0, len(body) - 1))]))  # a row twice
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in body:
        writer.writerow(row[: len(header)] if draw(st.booleans()) else row)
    text = out.getvalue()
    edit = draw(st.sampled_from(["none", "none", "bom", "nul", "quote", "cut"]))
    at = draw(st.integers(0, max(len(text) - 1, 0)))
    if edit == "bom":
        text = "\ufeff" + text
    elif edit == "nul":
        text = text[:at] + "\x00" + text[at:]
    elif edit == "quote":
        text = text[:at] + '"' + text[at:]
    elif edit == "cut":
        text = text[:at]
    return text


traces = st.tuples(
    csv_text(NODE_COLUMNS, node_rows()),
    csv_text(POD_COLUMNS, pod_rows()),
    st.sampled_from(RESOURCE_MODES),
    st.sampled_from(["cce", "hami", "volcano-vgpu"]),
)


@given(traces)
@fuzz_settings(150)
@example(("\ufeffsn,gpu\nn1,2\n", "name,num_gpu,gpu_milli\np,1,500\n", "gpu", "cce"))
@example(("sn,gpu\nn1,2\nn1,2\n", "name,num_gpu,gpu_milli\np,1,500\n", "gpu", "cce"))
@example(("sn,gpu\nn1,2\n", "name,num_gpu,gpu_milli\np,1,500\np,1,500\n", "gpu", "cce"))
@example(("sn,gpu\nn1,50000000\n", "name,num_gpu,gpu_milli\np,1,500\n", "gpu", "cce"))
@example(("sn,gpu\nn1,²\n", "name,num_gpu,gpu_milli\np,1,500\n", "gpu", "hami"))
@example(("sn\nn1\n", "name,num_gpu,gpu_milli\np,1,500\n", "all", "cce"))
def test_the_trace_reader_refuses_in_one_line_or_replays(
    workdir: Path, trace: tuple[str, str, str, str]
) -> None:
    nodes_text, pods_text, resources, profile = trace
    nodes, pods = workdir / "nodes.csv", workdir / "pods.csv"
    nodes.write_bytes(nodes_text.encode("utf-8", "surrogatepass"))
    pods.write_bytes(pods_text.encode("utf-8", "surrogatepass"))
    try:
        read_trace(nodes, pods, Policy("binpack", "binpack"), resources, Scheduler(profile))  # type: ignore[arg-type]
    except TraceError as err:
        message = str(err)
        assert message.startswith((f"{nodes}: ", f"{pods}: ")), message
        assert_one_line(message + "\n", "trace")
    written = workdir / "end.yaml"
    written.unlink(missing_ok=True)
    argv = [
        "replay",
        "--nodes",
        str(nodes),
        "--pods",
        str(pods),
        "--resources",
        resources,
        "--scheduler",
        profile,
        "--format",
        "json",
        "--write-scenario",
        str(written),
    ]
    outcome = run_main(cli.main, argv)
    assert_clean_exit(outcome, argv, ADVISOR_ERROR)
    if outcome.code == 0:
        cluster = load_scenario(written)  # the writer's output reads back ...
        assert scenario_to_data(load_scenario(written)) == scenario_to_data(cluster)
    else:
        assert not written.exists()  # ... and a refused trace writes nothing
