"""docs/reading-the-report.md quotes what the demo's report prints today.

The page's convention, which this test holds it to:

- A paragraph (or list item) that starts with "In the demo" quotes the demo's report
  (`make demo`, advisor/examples/demo.yaml read through a real Prometheus): each of its
  double-quoted strings and code spans is printed by that report.
- The summary cards the table under "The four summary cards" names are the report's.
- Any other double-quoted string names a heading, label or message of the report that the
  demo may not show (a Kubernetes source's column, a scale-up with no template): it is in
  the demo's report, or, where the demo has no such case, in the advisor's own code.

Each failure names the line of the page and the string that is no longer printed.

Also: `make demo-picture` redraws docs/images/demo-report.png from the demo, in headless
Chromium, with no path of the machine in the page it draws.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.demo import run_demo
from tests.advisor.chromium import decode_png, pixel_counts
from tests.docs.test_readme_commands import working_copy

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "reading-the-report.md"
DEMO_SCENARIO = REPO / "advisor" / "examples" / "demo.yaml"
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Quote:
    line: int
    text: str
    demo_only: bool  # must be in the demo's report, not merely somewhere in the code


def normalised(text: str) -> str:
    return " ".join(text.split())


def paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """(first line, text with its line breaks) of each paragraph, list item or table row
    outside fenced blocks."""
    current: list[str] = []
    start = 0
    fenced = False
    for number, line in enumerate([*text.splitlines(), ""], 1):
        fence = FENCE.match(line) is not None
        fenced = fenced != fence
        ends = fenced or fence or not line.strip() or line.startswith("#")
        row = line.startswith("|")
        if ends or row or re.match(r"^\s*(?:[-*]|\d+\.) ", line):
            if current:
                yield start, "\n".join(current)
            current = []
            if row and not fenced:
                yield number, line  # a table row is a paragraph of its own
            if ends or row:
                continue
        if not current:
            start = number
        current.append(line.strip())


def quotes(text: str) -> list[Quote]:
    """The double-quoted strings outside code spans; in an "In the demo" paragraph, its
    code spans too."""
    found = []
    for start, paragraph in paragraphs(text):
        demo = paragraph.lstrip("-* ").startswith("In the demo")
        for match in re.finditer(r'`([^`]+)`|"([^"]+)"', paragraph):
            line = start + paragraph.count("\n", 0, match.start())
            if match[2] is not None:
                found.append(Quote(line, normalised(match[2]), demo))
            elif demo:
                found.append(Quote(line, normalised(match[1]), True))
    return found


def summary_cards(text: str) -> list[Quote]:
    """The first column of the table whose header is `| card | reads |`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^\|\s*card\s*\|", line))
    cards = []
    for number in range(start + 2, len(lines)):
        if not lines[number].startswith("|"):
            break
        cards.append(Quote(number + 1, lines[number].split("|")[1].strip(), True))
    return cards


FIGURE = r"\d[\d,]*(?:\.\d+)?"


def figures(text: str) -> list[Quote]:
    """The numbers of each "In the demo" paragraph: the report prints each of them."""
    found = []
    for start, paragraph in paragraphs(text):
        if paragraph.lstrip("-* ").startswith("In the demo"):
            # Figures inside a quote are checked with it; blanked, keeping the line breaks.
            rest = re.sub(r'`[^`]+`|"[^"]+"', lambda m: re.sub(r"[^\n]", " ", m[0]), paragraph)
            for match in re.finditer(rf"(?<![\w.,/-]){FIGURE}", rest):
                line = start + paragraph.count("\n", 0, match.start())
                found.append(Quote(line, match[0], True))
    return found


@dataclass(frozen=True, slots=True)
class Printed:
    text: str  # the Markdown and the page's visible text, whitespace collapsed
    cards: tuple[str, ...]  # the summary cards' titles, in order

    @staticmethod
    def of(markdown: str, page: str) -> Printed:
        summary = markdown.partition("\n## Summary\n")[2].partition("\n## ")[0]
        cards = tuple(re.findall(r"^- \*\*([^*:]+):", summary, re.MULTILINE))
        plain = normalised(markdown.replace("\\[", "[").replace("\\]", "]"))
        return Printed(f"{plain}\n{page}", cards)

    def has(self, quote: Quote) -> bool:
        if re.fullmatch(FIGURE, quote.text):
            alone = rf"(?<![\w.,]){re.escape(quote.text)}(?!\w|[.,]\d)"  # not within 12.50
            return re.search(alone, self.text) is not None
        return quote.text in self.text


def page_text(path: Path) -> str:
    """The visible text of an HTML page, whitespace collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", path.read_text(), flags=re.DOTALL)
    return normalised(html.unescape(re.sub(r"<[^>]+>", " ", body)))


def code_text() -> str:
    parts = [p.read_text() for p in (REPO / "advisor").rglob("*.py")]
    parts += [p.read_text() for p in (REPO / "advisor" / "render" / "assets").glob("*")]
    return "\n".join(parts)


def stale(page: str, printed: Printed, code: str) -> list[str]:
    """One line per quote of `page` that the report no longer prints."""
    found = []
    for card in summary_cards(page):
        if card.text not in printed.cards:
            found.append(
                f"{PAGE.name}:{card.line}: names the summary card {card.text!r}; "
                f"the demo's report has {', '.join(printed.cards)}"
            )
    for quote in [*quotes(page), *figures(page)]:
        if printed.has(quote) or (not quote.demo_only and quote.text in code):
            continue
        where = (
            "the demo's report no longer prints"
            if quote.demo_only
            else "neither the demo's report nor the advisor's code prints"
        )
        found.append(f"{PAGE.name}:{quote.line}: quotes {quote.text!r}, which {where}")
    return sorted(found, key=lambda line: int(line.split(":")[1]))


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> Printed:
    """The demo's report (Markdown and the HTML page's text), run as `make demo` runs it."""
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus not found: the demo's report quoted needs it (make demo-deps)")
    out = tmp_path_factory.mktemp("demo") / "report"
    assert run_demo(DEMO_SCENARIO, out) == 0
    return Printed.of((out / "report.md").read_text(), page_text(out / "report.html"))


@pytest.mark.realservices  # the demo's exporters and Prometheus
@pytest.mark.timeout(300)
def test_every_string_the_page_quotes_is_what_the_demo_prints(printed: Printed) -> None:
    page = PAGE.read_text()
    assert stale(page, printed, code_text()) == []
    assert len([q for q in quotes(page) if q.demo_only]) >= 5  # the convention is in use


def test_a_stale_quote_is_named_with_its_line() -> None:
    page = (
        "| card | reads |\n|---|---|\n| Pending GPU pods | how many |\n| Fragmentation | x |\n\n"
        'The "Still Pending" list, the "Idle nodes kept, and why" table and "Gone away".\n\n'
        "In the demo, the summary reads\n"
        '"Rescuable by plans: 1 of 4 pods" and `cpu 30 of 32 requested`, and "3 GPUs short".\n'
        '- In the demo, "ml/finetune-0" waits for 40,960 MiB on 2 cards, 12.5% of 7.\n'
        '| cause | what |\n|---|---|\n| `capacity` | called "capacity (gone)" |\n'
    )
    markdown = (
        "# report\n\n## Summary\n\n- **Pending GPU pods: 9** (...)\n- **Stranded memory: 0**\n"
        "\n## Pending\n\n- **Rescuable by plans: 1 of 4 pods** \\[1\\]\n"
        "- cpu 30 of 32 requested\n- 40,960 MiB over 2 cards\n"
    )
    printed = Printed.of(markdown, "Rescuable by plans 12.50%")
    assert printed.cards == ("Pending GPU pods", "Stranded memory")
    code = 'TITLE = "Idle nodes kept, and why"\nSTILL = "Still Pending"\nx = "3 GPUs short"'
    gone = "which the demo's report no longer prints"
    assert stale(page, printed, code) == [
        f"{PAGE.name}:4: names the summary card 'Fragmentation'; "
        "the demo's report has Pending GPU pods, Stranded memory",
        f"{PAGE.name}:6: quotes 'Gone away', "
        "which neither the demo's report nor the advisor's code prints",
        f"{PAGE.name}:9: quotes '3 GPUs short', {gone}",
        f"{PAGE.name}:10: quotes 'ml/finetune-0', {gone}",
        f"{PAGE.name}:10: quotes '12.5', {gone}",  # 12.50 is another figure
        f"{PAGE.name}:10: quotes '7', {gone}",
        f"{PAGE.name}:13: quotes 'capacity (gone)', "
        "which neither the demo's report nor the advisor's code prints",
    ]


@pytest.mark.realservices  # make: the demo's exporters, Prometheus, headless Chromium
@pytest.mark.timeout(300)
def test_make_demo_picture_draws_the_demo_report(tmp_path: Path) -> None:
    for program in ("prometheus", "chromium"):
        if shutil.which(program) is None:
            pytest.fail(f"{program} not found: make demo-picture needs it (make system-deps)")
    work = working_copy(tmp_path / "checkout")
    picture = work / "docs" / "images" / "demo-report.png"
    picture.unlink()
    env = {**os.environ, "PATH": f"{work / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["make", "--no-print-directory", "demo-picture"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines()[-1] == "wrote docs/images/demo-report.png"
    width, height, rows = decode_png(picture.read_bytes())
    assert (width, height) == (1200, 1400)
    assert len(pixel_counts(rows)) > 200, "too few colours for text, badges and bars"
    page = (work / "out" / "demo-picture" / "report" / "report.html").read_text()
    assert "pods from advisor/examples/demo.yaml" in page  # the checkout's path is not shown
    assert str(work) not in page
