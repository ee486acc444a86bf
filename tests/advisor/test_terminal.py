"""Control characters from remote text never reach a terminal raw: the helper itself, the
advisor's errors and warnings on stderr, its Markdown on stdout, the exporter's logs."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.commands.cluster_input import print_notes
from advisor.core.model import Cluster
from advisor.sources.gather import Gathered
from advisor.terminal import one_line, terminal_text
from exporter.logfmt import LogfmtFormatter

HOSTILE = "a\x1b]0;owned\x07b\x1b[2Jc\rd\ne\tf\x9bg\u202eh\x00i\x7fj"


def test_one_line_escapes_every_control_character() -> None:
    assert one_line(HOSTILE) == (
        "a\\x1b]0;owned\\x07b\\x1b[2Jc\\rd\\ne\\tf\\x9bg\\u202eh\\x00i\\x7fj"
    )
    assert one_line("plain text, é ü 中文 ✓") == "plain text, é ü 中文 ✓"


def test_terminal_text_keeps_lines_and_tabs() -> None:
    assert terminal_text("| a\x1b[31m |\n|\tb |\r\n") == "| a\\x1b[31m |\n|\tb |\\r\n"


class _Prometheus(BaseHTTPRequestHandler):
    """Answers every query with an error whose text carries escape sequences."""

    def do_GET(self) -> None:
        body = json.dumps({"status": "error", "errorType": "bad_data", "error": HOSTILE})
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hostile_prometheus() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.realservices  # a stand-in Prometheus server
def test_a_prometheus_error_body_reaches_stderr_escaped(
    hostile_prometheus: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "advisor.cli", "snapshot"),
            *("--prometheus", hostile_prometheus, "--source-timeout", "10"),
            *("--output", str(tmp_path / "s.yaml")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "\\x1b]0;owned\\x07b\\x1b[2Jc" in done.stderr  # shown, not obeyed
    assert not any(c in done.stderr for c in "\x1b\x07\x00\x7f\x9b\u202e\r")
    assert not (tmp_path / "s.yaml").exists()


def test_warnings_go_to_stderr_escaped() -> None:
    gathered = Gathered(Cluster((), ()), (f"pod {HOSTILE} skipped",), (), "test")
    out = io.StringIO()
    print_notes(gathered, out)
    assert out.getvalue() == f"xgpu-advisor: warning: pod {one_line(HOSTILE)} skipped\n"


def test_markdown_on_stdout_is_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = {
        "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 1024}]}],
        "pods": [{"name": "a/x\x1b[2Jy", "request": {"gpus": 1, "memory_mib": 4096}}],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    assert main(["diagnose", "--scenario", str(path)]) == 0
    out = capsys.readouterr().out
    assert "a/x\\x1b\\[2Jy" in out  # listed, its name made visible (and "[" escaped: Markdown)
    assert "\x1b" not in out


def test_exporter_log_fields_are_escaped() -> None:
    record = logging.LogRecord("xgpu", logging.WARNING, "f", 1, "pod \x1b[2J gone", None, None)
    record.pod = HOSTILE
    line = LogfmtFormatter().format(record)
    assert line.endswith(f'msg="pod \\x1b[2J gone" pod="{one_line(HOSTILE)}"')
    assert "\n" not in line
    assert not any(c in line for c in "\x1b\x07\x00\x7f\x9b\u202e\r")
