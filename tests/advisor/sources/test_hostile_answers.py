"""A Prometheus or an exporter answering what no honest one does, through `xgpu-advisor
snapshot` (in-process) reading the loopback stand-in: a login page, garbage bytes, a series
twice with two values, label values and lines of 100 KB. Each is one line and exit 2, or a
snapshot whose messages stay lines a person can read; never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor import cli
from advisor.scenario import load_scenario
from advisor.sources.values import CARD_INFO, CARD_MEMORY
from advisor.terminal import MAX_LINE_CHARS
from tests.fuzz.hostile import ADVISOR_ERROR, Outcome, assert_clean_exit, run_main
from tests.fuzz.standin import StandIn, standin_server
from tests.fuzz.test_sources_readers import (
    GIB,
    _vector,
    exposition_lines,
    prometheus_answers,
    serve_prometheus,
)

pytestmark = pytest.mark.realservices  # a loopback stand-in server

LOGIN = (
    b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n"
    b"<body><form action=/login>user <input name=u></form></body></html>\n"
)
LONG = 100_000
CARD = {"node": "n1", "gpu_index": "0", "gpu_uuid": "GPU-0"}


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    with standin_server() as server:
        yield server


def snapshot(tmp_path: Path, source: list[str]) -> tuple[Outcome, Path]:
    out = tmp_path / "snapshot.yaml"
    argv = ["snapshot", *source, "--output", str(out), "--source-timeout", "10"]
    outcome = run_main(cli.main, argv)
    assert_clean_exit(outcome, argv, ADVISOR_ERROR)
    for line in outcome.stderr.splitlines():
        assert len(line) < MAX_LINE_CHARS + 200, line[:200]
    if outcome.code == 0:
        load_scenario(out)  # what snapshot writes, the loader reads
    else:
        assert not out.exists()
    return outcome, out


def refusal(tmp_path: Path, source: list[str]) -> str:
    outcome, _ = snapshot(tmp_path, source)
    assert outcome.code == 2, outcome
    return outcome.stderr.splitlines()[-1]


def serve(standin: StandIn, answers: dict[str, Any]) -> None:
    serve_prometheus(standin, {key: json.dumps(value).encode() for key, value in answers.items()})


def serve_page(standin: StandIn, page: bytes) -> None:
    standin.answer = lambda path, query: (200, page) if path == "/metrics" else (404, b"")


def exposition() -> str:
    return "\n".join(exposition_lines("n1")) + "\n"


# -- Prometheus ---------------------------------------------------------------------------


@pytest.mark.parametrize("body", [LOGIN, b"\x00\xff\x1b[2J garbage", b"<html>" * 20_000])
def test_prometheus_answering_a_page_or_garbage(
    standin: StandIn, tmp_path: Path, body: bytes
) -> None:
    standin.answer = lambda path, query: (200, body)
    line = refusal(tmp_path, ["--prometheus", standin.base])
    assert line == (
        f"xgpu-advisor: error: Prometheus {standin.base}: HTTP 200 without a JSON answer "
        "(is this Prometheus's API?)"
    )


def test_a_prometheus_series_given_twice_is_refused(standin: StandIn, tmp_path: Path) -> None:
    """Prometheus never answers one label set twice; which of 16 and 8 GiB is true cannot be
    told, so neither is taken."""
    answers = prometheus_answers()
    other = {**CARD, "gpu_index": "1", "gpu_uuid": "GPU-1"}
    answers[f"value {CARD_MEMORY}"] = _vector([(CARD, 16 * GIB), (CARD, 8 * GIB), (other, GIB)])
    serve(standin, answers)
    line = refusal(tmp_path, ["--prometheus", standin.base])
    assert line.startswith(f"xgpu-advisor: error: Prometheus {standin.base}: answer to `")
    assert line.endswith('holds the series {gpu_index="0",gpu_uuid="GPU-0",node="n1"} twice')


def test_a_100_kb_node_label_makes_short_lines(standin: StandIn, tmp_path: Path) -> None:
    """A series whose node label is 100 KB matches no card: that node is left out with a
    warning, and the warning is a line, not 100 KB."""
    answers = prometheus_answers()
    long_node = {**CARD, "node": "n" * LONG}
    answers[f"value {CARD_INFO}"]["data"]["result"].append(
        {"metric": {**long_node, "model": "T4"}, "value": [1, "1"]}
    )
    answers["value xgpu_node_info"]["data"]["result"].append(
        {"metric": {"node": "n" * LONG}, "value": [1, "1"]}
    )
    serve(standin, answers)
    outcome, _ = snapshot(tmp_path, ["--prometheus", standin.base])
    assert outcome.code in (0, 2), outcome
    assert "more characters)" in outcome.stderr


def test_a_100_kb_card_model_is_kept_whole(standin: StandIn, tmp_path: Path) -> None:
    answers = prometheus_answers()
    model = "T4 " + "x" * LONG + "\n<script>"
    answers[f"value {CARD_INFO}"] = _vector(
        [
            ({**CARD, "gpu_index": str(i), "gpu_uuid": f"GPU-{i}", "model": model}, 1.0)
            for i in (0, 1)
        ]
    )
    serve(standin, answers)
    outcome, out = snapshot(tmp_path, ["--prometheus", standin.base])
    assert outcome.code == 0, outcome
    assert {c.model for n in load_scenario(out).nodes for c in n.cards} == {model}


# -- exporters ----------------------------------------------------------------------------


def test_an_exporter_answering_a_login_page(standin: StandIn, tmp_path: Path) -> None:
    serve_page(standin, LOGIN)
    line = refusal(tmp_path, ["--exporters", standin.base])
    assert line == (
        f"xgpu-advisor: error: exporter {standin.base}/metrics: HTTP 200 with an HTML page, not "
        "metrics (a login page or a proxy in front of it? is this an xgpu exporter's /metrics?)"
    )


def test_an_unparsable_100_kb_line_is_not_echoed_whole(standin: StandIn, tmp_path: Path) -> None:
    serve_page(standin, (exposition() + "xgpu_card_info{" + "a" * LONG + "\n").encode())
    line = refusal(tmp_path, ["--exporters", standin.base])
    assert line.startswith(
        f"xgpu-advisor: error: exporter {standin.base}/metrics: cannot parse its metrics: "
    )
    assert len(line) < 500


def test_an_exporter_series_given_twice_is_refused(standin: StandIn, tmp_path: Path) -> None:
    lines = exposition_lines("n1")
    memory = next(line for line in lines if line.startswith("xgpu_card_memory_total_bytes{"))
    twice = memory.rsplit(" ", 1)[0] + " 1024"
    serve_page(standin, ("\n".join([*lines, twice]) + "\n").encode())
    line = refusal(tmp_path, ["--exporters", standin.base])
    assert line.startswith(
        f"xgpu-advisor: error: exporter {standin.base}/metrics: invalid series "
        "xgpu_card_memory_total_bytes{"
    )
    assert line.endswith(": given twice")


def test_a_100_kb_label_value_from_an_exporter(standin: StandIn, tmp_path: Path) -> None:
    serve_page(standin, exposition().replace('model="', 'model="' + "y" * LONG).encode())
    outcome, out = snapshot(tmp_path, ["--exporters", standin.base])
    assert outcome.code == 0, outcome
    assert all(c.model.startswith("y" * LONG) for n in load_scenario(out).nodes for c in n.cards)
