"""The reports' home: `report --reports DIR --keep N` keeps the last N runs, each in a folder
of its own, under an index page rewritten after each run; a failed run removes nothing."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.commands.archive import INDEX, SUMMARY, folder_name, list_runs, store_run
from tests.realparts import DEMO

TEXTS = {"report.json": "{}\n", "report.md": "# r\n", "report.html": "<p>r</p>\n"}
# 2025-12-02 01:45:00 UTC: 1,764,639,900 s after the epoch (20,424 days x 86,400 + 6,300;
# 1970 to 2025 is 55 x 365 + 14 leap days = 20,089 days, then 334 days to 1 December + 1)
T0 = 20424 * 86400 + 6300.0


class Links(HTMLParser):
    """The hrefs of a page and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [v or "" for k, v in attrs if tag == "a" and k == "href"]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def links(page: str) -> Links:
    parser = Links()
    parser.feed(page)
    return parser


def store(root: Path, at: float, keep: int = 3, summary: str = "s") -> Path:
    return store_run(root, TEXTS, {"summary": summary}, at, keep)


def test_folder_names_are_utc_seconds() -> None:
    assert folder_name(T0) == "20251202T014500Z"


def test_the_last_n_runs_are_kept_newest_first(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    for minute in range(5):
        store(root, T0 + 60 * minute)
    # runs at :45, :46, :47, :48, :49; the 3 newest stay
    assert list_runs(root) == ["20251202T014900Z", "20251202T014800Z", "20251202T014700Z"]
    assert sorted(os.listdir(root)) == [*sorted(list_runs(root)), INDEX]  # nothing else left
    hrefs = links((root / INDEX).read_text()).hrefs
    assert hrefs == [
        f"{run}/{name}"
        for run in list_runs(root)
        for name in ("report.html", "report.md", "report.json")
    ]
    for run in list_runs(root):
        assert sorted(os.listdir(root / run)) == sorted([*TEXTS, SUMMARY])


def test_two_runs_in_one_second_both_stay(tmp_path: Path) -> None:
    store(tmp_path, T0)
    store(tmp_path, T0 + 0.5)
    store(tmp_path, T0 + 0.9)
    assert list_runs(tmp_path) == ["20251202T014500Z-3", "20251202T014500Z-2", "20251202T014500Z"]


def test_the_index_escapes_what_runs_say(tmp_path: Path) -> None:
    hostile = '<script>alert(1)</script> & "quoted"'
    store(tmp_path, T0, summary=hostile)
    page = (tmp_path / INDEX).read_text()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;" in page
    assert hostile in "".join(links(page).text)  # and reads back as it was said


def test_a_failed_run_removes_nothing(tmp_path: Path) -> None:
    """keep=1 would drop both earlier runs, but the new run fails while it is written (a
    file name under a folder that does not exist): the old runs, their index and nothing
    else remain."""
    store(tmp_path, T0, keep=2)
    store(tmp_path, T0 + 60, keep=2)
    before = sorted(os.listdir(tmp_path))
    index = (tmp_path / INDEX).read_text()
    with pytest.raises(FileNotFoundError):
        store_run(tmp_path, {"missing/report.html": "x"}, {}, T0 + 120, keep=1)
    assert sorted(os.listdir(tmp_path)) == before  # no staging folder left either
    assert (tmp_path / INDEX).read_text() == index


def test_the_index_skips_what_is_not_a_run(tmp_path: Path) -> None:
    """A textfile, a stray folder and a symlink named like a run are not runs; an unreadable
    summary leaves the summary cell empty."""
    store(tmp_path, T0)
    (tmp_path / "xgpu_advisor.prom").write_text("x 1\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "20991231T000000Z").symlink_to(tmp_path / "notes")
    (tmp_path / "20251202T014500Z" / SUMMARY).write_text("{not json")
    store(tmp_path, T0 + 60)
    assert list_runs(tmp_path) == ["20251202T014600Z", "20251202T014500Z"]
    page = (tmp_path / INDEX).read_text()
    assert "20991231" not in page
    assert re.search(r"2025-12-02 01:45:00</td><td></td>", page)


def test_report_writes_its_runs_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "reports"
    for _ in range(3):
        assert main(["report", "--scenario", str(DEMO), "--reports", str(root), "--keep", "2"]) == 0
    runs = list_runs(root)
    assert len(runs) == 2
    newest = root / runs[0]
    data = json.loads((newest / "report.json").read_text())
    assert data["schema"] == "xgpu-advisor/report/v1"
    assert (newest / "report.html").read_text().lower().startswith("<!doctype html>")
    summary = json.loads((newest / SUMMARY).read_text())
    assert summary["generated_at"] == data["generated_at"]
    # the demo: 10 Pending pods, one plan rescuing one (the command's own line says the same)
    assert summary["summary"].startswith("10 Pending GPU pods (")
    assert summary["summary"].endswith("; 1 plan rescuing 1 pod")
    err = capsys.readouterr().err
    assert f"reports in {newest}/ (index {root / INDEX})" in err
    assert summary["summary"] in (root / INDEX).read_text()


def test_the_latest_reports_and_the_home_can_share_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--output-dir` and `--reports` on one folder (the CronJob's volume): the latest
    reports at the top, beside the index and the run folders, which hold the same files."""
    argv = ["report", "--scenario", str(DEMO), "--output-dir", str(tmp_path)]
    assert main([*argv, "--reports", str(tmp_path), "--keep", "1"]) == 0
    (run,) = list_runs(tmp_path)
    assert sorted(os.listdir(tmp_path)) == sorted([*TEXTS, INDEX, run])
    for name in TEXTS:
        assert (tmp_path / name).read_text() == (tmp_path / run / name).read_text()
    err = capsys.readouterr().err
    assert f"reports in {tmp_path}/ and {tmp_path / run}/ (index {tmp_path / INDEX})" in err


def test_report_needs_somewhere_to_write(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--scenario", str(DEMO)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "give --output-dir (the latest reports) or --reports" in err


@pytest.mark.parametrize("keep", ["0", "-1", "x"])
def test_keep_must_be_a_positive_count(
    keep: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--scenario", str(DEMO), "--reports", str(tmp_path), "--keep", keep])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--keep" in err
    assert os.listdir(tmp_path) == []
