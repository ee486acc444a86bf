"""The advisor's CLI against hostile peers: a local aiohttp server answering too large, too
deep, too slow, never-ending, in a redirect loop, or with a present but invalid series. Each
run is a real `xgpu-advisor` process: it exits 2 with one line on stderr, within its
timeout, and writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.advisor.sources.hostile import deep_json, hostile_server

pytestmark = pytest.mark.realservices

TIMEOUT_S = 2.0  # --source-timeout of every run
# Start-up (imports: pandas, aiohttp) and shut-down of the CLI on a loaded machine; the
# assertion is that the run ends near its timeout, not minutes later or never.
SLACK_S = 20.0


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with hostile_server() as url:
        yield url


def advisor(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    script = Path(sys.executable).parent / "xgpu-advisor"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "advisor.cli"]
    started = time.monotonic()
    done = subprocess.run(
        [*command, *args], capture_output=True, text=True, check=False, timeout=120
    )
    return done, time.monotonic() - started


def snapshot(tmp_path: Path, url: str, *extra: str) -> tuple[str, float]:
    """The one line of stderr of a failed `snapshot` against `url`; its wall time."""
    out = tmp_path / "snapshot.yaml"
    done, took = advisor(
        "snapshot", "--prometheus", url, "--output", str(out),
        "--source-timeout", str(TIMEOUT_S), *extra,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()  # nothing half-written
    return lines[0], took


def test_an_answer_past_the_cap_is_refused_while_streaming(tmp_path: Path, server: str) -> None:
    # 8 MiB streamed, chunked (no Content-Length): refused once 1 MiB has been counted.
    line, _ = snapshot(
        tmp_path, f"{server}/large/{8 * 2**20}", "--prometheus.max-answer-bytes", "1MiB"
    )
    assert line == (
        f"xgpu-advisor: error: Prometheus {server}/large/{8 * 2**20}: "
        "answer larger than 1 MiB (--prometheus.max-answer-bytes)"
    )


def test_a_declared_length_past_the_cap_is_refused_unread(tmp_path: Path, server: str) -> None:
    # The server declares 500 MiB and sends nothing: refusal comes from the header alone, at
    # once (long before the 2 s timeout would end the wait for a body that never comes).
    line, took = snapshot(tmp_path, f"{server}/declared/{500 * 2**20}")
    assert line.endswith("answer larger than 64 MiB (--prometheus.max-answer-bytes)")
    assert took < SLACK_S


def test_an_answer_within_the_cap_is_read(tmp_path: Path, server: str) -> None:
    # The same stream of 2 MiB passes a 4 MiB cap: it then fails as what it is (one card
    # series, repeated, answered to every query), not on its size.
    line, _ = snapshot(
        tmp_path, f"{server}/large/{2 * 2**20}", "--prometheus.max-answer-bytes", "4MiB"
    )
    assert "answer larger" not in line
    assert line.endswith('holds the series {gpu_index="0",gpu_uuid="GPU-0",node="n1"} twice')


def test_more_series_than_the_cap(tmp_path: Path, server: str) -> None:
    # 1 MiB of 76-byte series is about 13,800 of them in the first answer alone.
    url = f"{server}/large/{2**20}"
    line, _ = snapshot(tmp_path, url, "--prometheus.max-series", "1000")
    cap = "more than 1,000 series (--prometheus.max-series)"
    assert line == f"xgpu-advisor: error: Prometheus {url}: {cap}"


def test_json_nested_100000_deep_is_one_line(tmp_path: Path, server: str) -> None:
    line, _ = snapshot(tmp_path, f"{server}/deep/100000")
    assert line.startswith(f"xgpu-advisor: error: Prometheus {server}/deep/100000: answer to `")
    assert line.endswith("is JSON nested too deep")


def test_a_server_that_never_answers_times_out(tmp_path: Path, server: str) -> None:
    line, took = snapshot(tmp_path, f"{server}/slow")
    assert line == f"xgpu-advisor: error: Prometheus {server}/slow: cannot reach it: timed out"
    assert TIMEOUT_S <= took < TIMEOUT_S + SLACK_S


def test_a_never_ending_answer_times_out(tmp_path: Path, server: str) -> None:
    # 64 KiB every 10 ms: under the 64 MiB cap for about 10 s, so the 2 s timeout ends it.
    line, took = snapshot(tmp_path, f"{server}/endless")
    assert line == f"xgpu-advisor: error: Prometheus {server}/endless: cannot reach it: timed out"
    assert TIMEOUT_S <= took < TIMEOUT_S + SLACK_S


def test_a_redirect_loop_is_said_in_words(tmp_path: Path, server: str) -> None:
    line, _ = snapshot(tmp_path, f"{server}/loop")
    # aiohttp follows 10 redirects by default, then gives up.
    assert line == (
        f"xgpu-advisor: error: Prometheus {server}/loop: cannot reach it: "
        "too many redirects (10 followed)"
    )


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("abc", "value 'abc' is not a number"),
        ("nan", "value nan is not a finite number"),
        ("nolabel", "label gpu_index missing"),
    ],
)
def test_a_present_but_invalid_series_is_named(
    tmp_path: Path, server: str, kind: str, problem: str
) -> None:
    line, _ = snapshot(tmp_path, f"{server}/invalid/{kind}")
    labels = (
        'gpu_uuid="GPU-0",node="n1"'
        if kind == "nolabel"
        else ('gpu_index="0",gpu_uuid="GPU-0",node="n1"')
    )
    assert line == (
        f"xgpu-advisor: error: Prometheus {server}/invalid/{kind}: invalid series "
        f"xgpu_card_memory_total_bytes{{{labels}}}: {problem}"
    )
    assert "missing" not in line or kind == "nolabel"


def test_report_refuses_the_same_way(tmp_path: Path, server: str) -> None:
    done, _ = advisor(
        "report", "--prometheus", f"{server}/deep/100000", "--output-dir", str(tmp_path / "r"),
        "--source-timeout", str(TIMEOUT_S),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        line for line in done.stderr.splitlines() if line.endswith("is JSON nested too deep")
    ]
    assert len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "r" / "report.json").exists()


def test_an_exporter_page_past_its_cap(tmp_path: Path, server: str) -> None:
    url = f"{server}/metrics/{4 * 2**20}"
    out = tmp_path / "s.yaml"
    done, _ = advisor(
        "snapshot", "--exporters", url, "--output", str(out),
        "--exporters.max-answer-bytes", "1MiB", "--source-timeout", str(TIMEOUT_S),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"xgpu-advisor: error: exporter {url}: "
        "answer larger than 1 MiB (--exporters.max-answer-bytes)"
    ]


def test_pods_from_nested_100000_deep(tmp_path: Path, server: str) -> None:
    # --pods-from reads a scenario file: its reader bounds depth before any recursion.
    pods = tmp_path / "pods.json"
    pods.write_text(deep_json(100_000))
    done, _ = advisor(
        "snapshot", "--prometheus", f"{server}/invalid/ok", "--pods-from", str(pods),
        "--output", str(tmp_path / "s.yaml"), "--source-timeout", str(TIMEOUT_S),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"xgpu-advisor: error: {pods}: (parse): nested deeper than 64 levels"
    )
    assert "Traceback" not in done.stderr


def test_a_kubernetes_answer_nested_100000_deep(tmp_path: Path, server: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"{server}/kube-deep"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    line, _ = snapshot(tmp_path, f"{server}/invalid/ok", "--kubeconfig", str(kubeconfig))
    assert line.startswith(f"xgpu-advisor: error: Kubernetes API {server}/kube-deep: list ")
    assert line.endswith(": HTTP 200 answer is JSON nested too deep")
