"""`xgpu-advisor serve --reports DIR` as a real process, asked over real HTTP: the index and
the runs' reports, GET and HEAD only, nothing outside DIR (no `..`, no symlink out, no hidden
staging folder), the security headers on every answer; and headless Chromium showing the
served index and a served report under that Content-Security-Policy."""

from __future__ import annotations

import http.client
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.commands.archive import INDEX, list_runs
from advisor.commands.serve_app import SECURITY_HEADERS
from tests.advisor.chromium import chromium_path, decode_png, hex_rgb, pixel_counts, run_chromium
from tests.advisor.commands.test_report_archive import links
from tests.realparts import DEMO, free_port, running_process, stop_process

pytestmark = pytest.mark.realservices
SECRET = "secret outside the reports' home\n"


@dataclass(frozen=True)
class Served:
    root: Path
    port: int
    process: subprocess.Popen[bytes]

    def ask(self, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
        """The raw request line as given (http.client does not normalise `..`)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()


def serve_command(root: Path, listen: str) -> list[str]:
    script = Path(sys.executable).parent / "xgpu-advisor"
    program = [str(script)] if script.exists() else [sys.executable, "-m", "advisor.cli"]
    return [*program, "serve", "--reports", str(root), "--listen", listen]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Two real runs of the demo, plus what must not be served: a file outside linked in, a
    hidden staging folder, a script; and what may be: a link inside, the textfile."""
    base = tmp_path_factory.mktemp("serve")
    root = base / "reports"
    for _ in range(2):
        assert main(["report", "--scenario", str(DEMO), "--reports", str(root)]) == 0
    (base / "secret.html").write_text(SECRET)
    (root / "leak.html").symlink_to(base / "secret.html")
    (root / "leakdir").symlink_to(base)
    (root / "alias.html").symlink_to(root / INDEX)
    staging = root / ".20990101T000000Z.abc.partial"
    staging.mkdir()
    (staging / "report.html").write_text("half a run")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "xgpu_advisor.prom").write_text("xgpu_advisor_up 1\n")
    port = free_port()
    command = serve_command(root, f"127.0.0.1:{port}")
    with running_process(command, f"http://127.0.0.1:{port}/", base / "serve.log") as process:
        yield Served(root, port, process)


def assert_secured(headers: dict[str, str]) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert headers.get(name) == value, name


def test_the_index_and_every_report_it_links(served: Served) -> None:
    status, headers, body = served.ask("GET", "/")
    assert (status, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert_secured(headers)
    assert body == (served.root / INDEX).read_bytes()
    hrefs = links(body.decode()).hrefs
    runs = list_runs(served.root)
    assert len(hrefs) == 3 * len(runs) == 6
    types = {
        "html": "text/html; charset=utf-8",
        "md": "text/plain; charset=utf-8",
        "json": "application/json",
    }
    for href in hrefs:
        status, headers, body = served.ask("GET", f"/{href}")
        assert status == 200, href
        assert headers["Content-Type"] == types[href.rsplit(".", 1)[1]]
        assert_secured(headers)
        assert body == (served.root / href).read_bytes()


def test_head_answers_like_get_without_the_body(served: Served) -> None:
    status, headers, body = served.ask("HEAD", "/index.html")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) == (served.root / INDEX).stat().st_size
    assert_secured(headers)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_only_get_and_head(served: Served, method: str) -> None:
    status, headers, _ = served.ask(method, "/index.html")
    assert status == 405
    assert set(headers["Allow"].split(",")) == {"GET", "HEAD"}
    assert_secured(headers)
    assert (served.root / INDEX).exists()


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.html",
        "/%2e%2e/secret.html",
        "/..%2fsecret.html",
        "/%2e%2e%2fsecret.html",
        "/x/../../secret.html",
        "/leak.html",  # a symlink out of the home
        "/leakdir/secret.html",  # through a linked folder out of it
        "/.20990101T000000Z.abc.partial/report.html",  # a staging folder
        "/run.sh",  # not a report
        "/missing.html",
        "/leakdir",
    ],
)
def test_nothing_outside_the_home_or_hidden(served: Served, path: str) -> None:
    status, headers, body = served.ask("GET", path)
    assert status == 404, path
    assert SECRET.encode() not in body
    assert b"half a run" not in body
    assert_secured(headers)


def test_a_folder_is_not_listed(served: Served) -> None:
    status, _, body = served.ask("GET", f"/{list_runs(served.root)[0]}/")
    assert status == 404
    assert b"report.html" not in body


def test_links_inside_the_home_and_the_textfile_are_served(served: Served) -> None:
    assert served.ask("GET", "/alias.html")[2] == (served.root / INDEX).read_bytes()
    status, headers, body = served.ask("GET", "/xgpu_advisor.prom")
    assert (status, headers["Content-Type"], body) == (
        200,
        "text/plain; charset=utf-8",
        b"xgpu_advisor_up 1\n",
    )


def test_sigterm_stops_it_cleanly(tmp_path: Path) -> None:
    port = free_port()
    command = serve_command(tmp_path, f"127.0.0.1:{port}")
    (tmp_path / INDEX).write_text("<p>empty</p>")
    with running_process(command, f"http://127.0.0.1:{port}/", tmp_path / "log") as process:
        assert stop_process(process) == 0  # SIGTERM, then exit 0
    assert "serving" in (tmp_path / "log").read_text()


def test_a_port_in_use_is_one_line_and_exit_2(served: Served, tmp_path: Path) -> None:
    done = subprocess.run(
        serve_command(tmp_path, f"127.0.0.1:{served.port}"),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"xgpu-advisor: error: --listen 127.0.0.1:{served.port}: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reports", "/nonexistent/reports"], "--reports /nonexistent/reports: not a directory"),
        (["--reports", ".", "--listen", "localhost"], "--listen 'localhost': expected [HOST]:PORT"),
        (["--reports", ".", "--listen", ":99999"], "--listen ':99999': expected [HOST]:PORT"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_chromium_shows_the_served_index_and_report(served: Served, tmp_path: Path) -> None:
    """Chromium loads the index over HTTP under the served Content-Security-Policy: the DOM
    holds every run's links; the page's inline stylesheet applies (the policy allows inline
    styles): the background #f1f5f9 fills most of the window and the newest run's row is
    #eff6ff. A served report renders its own heading."""
    binary = chromium_path()
    url = f"http://127.0.0.1:{served.port}/"
    dom = run_chromium(binary, tmp_path / "p1", "--dump-dom", url).decode()
    runs = list_runs(served.root)
    for run in runs:
        assert f'href="{run}/report.html"' in dom
    shot = tmp_path / "index.png"
    run_chromium(binary, tmp_path / "p2", "--window-size=900,600", f"--screenshot={shot}", url)
    width, height, rows = decode_png(shot.read_bytes())
    counts = pixel_counts(rows)
    assert counts[hex_rgb("#f1f5f9")] > width * height // 2
    assert counts[hex_rgb("#eff6ff")] > 0
    report = run_chromium(
        binary, tmp_path / "p3", "--dump-dom", f"{url}{runs[0]}/report.html"
    ).decode()
    assert "<main" in report
    assert "Pending" in report
