"""The Prometheus answer reader and the exporter /metrics reader against hostile answers,
through `xgpu-advisor snapshot` (in-process) reading a loopback stand-in: values of 1e30,
NaN, +Inf, beyond int64 or "²", labels of the wrong type or with control characters, JSON
nested 100,000 deep, expositions with lines twice, no node, broken syntax, NUL bytes.

Exit 0 or 2 with one error line; a snapshot written is a scenario the loader reads back,
and a refused one leaves no file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor import cli
from advisor.scenario import load_scenario
from advisor.sources.values import (
    CARD_HEALTH,
    CARD_INFO,
    CARD_MEMORY,
    CARD_MIG_MODE,
    CARD_MODE,
    COLLECTOR_SUCCESS,
    MIG_INSTANCE,
    MIG_POD,
    NODE_INFO,
    VGPU_CORE,
    VGPU_MEMORY,
)
from tests.fuzz.hostile import ADVISOR_ERROR, Outcome, assert_clean_exit, hostile_texts, run_main
from tests.fuzz.mutate import mutated
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.standin import StandIn, standin_server

pytestmark = [pytest.mark.fuzz, pytest.mark.realservices]  # a loopback stand-in server

NOW = 1_700_000_000.0
GIB = 2**30
METRICS = sorted(  # longest first: no name is then found inside another
    [
        NODE_INFO,
        CARD_INFO,
        CARD_MEMORY,
        CARD_HEALTH,
        CARD_MODE,
        CARD_MIG_MODE,
        MIG_INSTANCE,
        MIG_POD,
        VGPU_MEMORY,
        VGPU_CORE,
        COLLECTOR_SUCCESS,
    ],
    key=len,
    reverse=True,
)


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    with standin_server() as server:
        yield server


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sources-fuzz")


def snapshot(workdir: Path, source: list[str]) -> tuple[Outcome, Path, list[str]]:
    out = workdir / "snapshot.yaml"
    out.unlink(missing_ok=True)
    argv = ["snapshot", *source, "--output", str(out), "--source-timeout", "10"]
    outcome = run_main(cli.main, argv)
    assert_clean_exit(outcome, argv, ADVISOR_ERROR)
    if outcome.code == 0:
        load_scenario(out)  # what snapshot writes, the loader reads
    else:
        assert not out.exists()
    return outcome, out, argv


# -- Prometheus -------------------------------------------------------------------------


def _vector(samples: list[tuple[dict[str, str], float]]) -> dict[str, Any]:
    result = [{"metric": labels, "value": [NOW, repr(value)]} for labels, value in samples]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def prometheus_answers() -> dict[str, Any]:
    """A node of two 16 GiB cards, a pod on card 0 with 4 GiB and 20% core, all fresh."""
    cards = [{"node": "n1", "gpu_index": str(i), "gpu_uuid": f"GPU-{i}"} for i in (0, 1)]
    vgpu = {"node": "n1", "namespace": "ml", "pod": "p", "gpu_index": "0"}
    values: dict[str, list[tuple[dict[str, str], float]]] = {
        NODE_INFO: [({"node": "n1"}, 1.0)],
        CARD_INFO: [({**c, "model": "Tesla T4"}, 1.0) for c in cards],
        CARD_MEMORY: [(c, 16.0 * GIB) for c in cards],
        CARD_HEALTH: [(c, 0.0) for c in cards],
        CARD_MODE: [(c, 1.0) for c in cards],
        CARD_MIG_MODE: [],  # no MIG card here
        MIG_INSTANCE: [],
        MIG_POD: [],
        VGPU_MEMORY: [(vgpu, 4.0 * GIB)],
        VGPU_CORE: [(vgpu, 20.0)],
        COLLECTOR_SUCCESS: [({"node": "n1", "collector": "nvml"}, 1.0)],
    }
    answers: dict[str, Any] = {
        "time": {"status": "success", "data": {"resultType": "scalar", "result": [NOW, str(NOW)]}},
        "ended": _vector([]),
    }
    for metric, samples in values.items():
        answers[f"value {metric}"] = _vector(samples)
        answers[f"newest {metric}"] = _vector([(labels, NOW - 5) for labels, _ in samples])
    return answers


def route(query: str) -> str:
    if query.strip() == "time()":
        return "time"
    if "max_over_time" in query:
        return "ended"
    metric = next((m for m in METRICS if m in query), "")
    return f"{'newest' if 'timestamp(' in query else 'value'} {metric}"


def serve_prometheus(standin: StandIn, bodies: dict[str, bytes]) -> None:
    def answer(path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if not path.startswith("/api/v1/query"):
            return 404, b"404 page not found"
        return 200, bodies.get(route(query.get("query", "")), b"{}")

    standin.answer = answer


@st.composite
def prometheus_bodies(draw: st.DrawFn) -> dict[str, bytes]:
    answers = draw(mutated(prometheus_answers()))
    if not isinstance(answers, dict):
        answers = {}
    bodies = {key: json.dumps(value).encode() for key, value in answers.items()}
    if draw(st.booleans()) and draw(st.booleans()) and len(bodies) > 0:
        key = draw(st.sampled_from(sorted(bodies)))
        bodies[key] = draw(
            st.sampled_from(
                [
                    b"[" * 100_000 + b"]" * 100_000,
                    b'{"status": "success", "data": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                    b"\xff\xfe not json",
                    b"",
                    b'{"status": "error", "errorType": "bad_data", "error": "\x1b[2Jgone\\nline"}',
                    b'{"status": "success", "warnings": ["store down\\n"], "data": {}}',
                ]
            )
        )
    return bodies


def test_the_stand_in_prometheus_is_read_as_it_stands(standin: StandIn, workdir: Path) -> None:
    """The unmutated answers make a snapshot: the fuzz below starts from a valid answer."""
    serve_prometheus(standin, {k: json.dumps(v).encode() for k, v in prometheus_answers().items()})
    outcome, out, argv = snapshot(workdir, ["--prometheus", standin.base])
    assert outcome.code == 0, (argv, outcome)
    cluster = load_scenario(out)
    assert [len(n.cards) for n in cluster.nodes] == [2]
    assert [p.request.memory_mib for p in cluster.pods] == [4096]  # 4 GiB in MiB


@given(prometheus_bodies())
@fuzz_settings(100)
def test_prometheus_answers_exit_0_or_2_in_one_line(
    standin: StandIn, workdir: Path, bodies: dict[str, bytes]
) -> None:
    serve_prometheus(standin, bodies)
    snapshot(workdir, ["--prometheus", standin.base])


# -- exporters ---------------------------------------------------------------------------


def exposition_lines(node: str) -> list[str]:
    card = '{gpu_index="0",gpu_uuid="GPU-a"}'
    vgpu = '{namespace="ml",pod="p",container="c",gpu_index="0",gpu_uuid="GPU-a"}'
    return [
        "# TYPE xgpu_node_info gauge",
        f'xgpu_node_info{{node="{node}"}} 1',
        "# TYPE xgpu_card_info gauge",
        'xgpu_card_info{gpu_index="0",gpu_uuid="GPU-a",model="Tesla T4"} 1',
        "# TYPE xgpu_card_memory_total_bytes gauge",
        f"xgpu_card_memory_total_bytes{card} {16 * GIB}",
        "# TYPE xgpu_device_health gauge",
        f"xgpu_device_health{card} 0",
        "# TYPE gpu_schedule_policy gauge",
        f"gpu_schedule_policy{card} 1",
        "# TYPE xgpu_memory_total gauge",
        f"xgpu_memory_total{vgpu} {4 * GIB}",
        "# TYPE xgpu_core_percentage_total gauge",
        f"xgpu_core_percentage_total{vgpu} 20",
    ]


HOSTILE_NUMBERS = ["1e30", "NaN", "+Inf", "-Inf", "99999999999999999999999", "²", "-1", "1e308"]


@st.composite
def exposition(draw: st.DrawFn, node: str) -> bytes:
    lines = exposition_lines(node)
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        edit = draw(st.sampled_from(["value", "label", "twice", "drop", "timestamp", "raw"]))
        if edit == "value" and not line.startswith("#"):
            lines[i] = line.rsplit(" ", 1)[0] + " " + draw(st.sampled_from(HOSTILE_NUMBERS))
        elif edit == "label" and '="' in line:
            text = draw(hostile_texts())
            text = text.replace("\\", "\\\\").replace('"', '\\"')
            lines[i] = line.replace('="', f'="{text}', 1)
        elif edit == "twice":
            lines.insert(i, line)
        elif edit == "drop":
            del lines[i]
        elif edit == "timestamp" and not line.startswith("#"):
            lines[i] = (
                line + " " + draw(st.sampled_from(["99999999999999999999", "1e30", "-5", "x"]))
            )
        elif edit == "raw":
            lines[i] = draw(hostile_texts())
    text = "\n".join(lines) + "\n"
    if draw(st.integers(0, 5)) == 0:
        text = draw(st.sampled_from(["\ufeff", "\x00", "{" * 10_000])) + text
    return text.encode("utf-8", "surrogatepass")


def serve_exporters(standin: StandIn, pages: dict[str, bytes]) -> str:
    standin.answer = lambda path, query: (200, pages[path]) if path in pages else (404, b"")
    return ",".join(f"{standin.base}{path}" for path in pages)


NODE_LINE = 'xgpu_node_info{node="n1"} 1\n'


@given(st.tuples(exposition("n1"), exposition(node="n2")), st.booleans())
@fuzz_settings(100)
@example(((NODE_LINE + 'xgpu_card_memory_total_bytes{gpu_index="0"} 1e30\n').encode(), b""), False)
@example(
    ((NODE_LINE + 'xgpu_card_info{gpu_index="9999999999999999999999"} 1\n').encode(), b""), False
)
@example(((NODE_LINE + 'xgpu_card_info{gpu_index="²",gpu_uuid="a"} 1\n').encode(), b""), False)
@example(
    ((NODE_LINE + 'xgpu_device_health{gpu_index="0",gpu_uuid="a"} NaN\n').encode(), b""), False
)
def test_exporter_pages_exit_0_or_2_in_one_line(
    standin: StandIn, workdir: Path, pages: tuple[bytes, bytes], two: bool
) -> None:
    chosen = {"/n1/metrics": pages[0], **({"/n2/metrics": pages[1]} if two else {})}
    urls = serve_exporters(standin, chosen)
    snapshot(workdir, ["--exporters", urls])


def test_the_stand_in_exporters_are_read_as_they_stand(standin: StandIn, workdir: Path) -> None:
    pages = {f"/{n}/metrics": "\n".join(exposition_lines(n)).encode() + b"\n" for n in ("n1", "n2")}
    outcome, out, argv = snapshot(workdir, ["--exporters", serve_exporters(standin, pages)])
    assert outcome.code == 0, (argv, outcome)
    assert sorted(n.name for n in load_scenario(out).nodes) == ["n1", "n2"]


def test_a_superscript_card_index_is_one_line(standin: StandIn, workdir: Path) -> None:
    page = NODE_LINE + 'gpu_schedule_policy{gpu_index="²",gpu_uuid="GPU-a"} 1\n'
    snapshot(workdir, ["--exporters", serve_exporters(standin, {"/n1/metrics": page.encode()})])
