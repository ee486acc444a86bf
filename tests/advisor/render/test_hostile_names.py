"""Markup in everything a cluster names (pod names and namespaces, node names, card models,
owners, label values, annotations, taints), through every command and page: diagnose, plan
and whatif in Markdown and HTML, report's three files and the reports' index.

The demo is dressed twice, each name given a suffix: once plain, once hostile (`<script>`,
`</td>`, `|`, backticks, `[x](javascript:...)`, newlines, `<!--`, emphasis, a bare URL, an
e-mail address). Each suffix keeps the names' order, so the two runs reach the same
decisions and their pages must have the same structure: the same elements, in the same
order, with the same links. The Markdown is read by cmark-gfm, GitHub's own renderer, so a
name that made a link, an image, emphasis or a table column would show; the HTML by the
standard library's parser, to which an unescaped tag is an element.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from tests.realparts import DEMO

cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmarkgfm (a test dependency) reads the Markdown")

_RUN = re.compile(r"^[0-9]{8}T[0-9]{6}Z[^/]*/")
HOSTILE = [
    "<script>alert(1)</script>",
    "</td></tr><b>x",
    "a|b|c",
    "`tick`",
    "[x](javascript:alert(1))",
    "line1\nline2",
    "<!--",
    " *em* _u_ ~~del~~",
    "![i](http://e.example/x.png)",
    " http://evil.example/ www.evil.example",
    " mail@evil.example",
    "&lt;b&gt;",
    "# head",
]


def dress(data: dict[str, Any], suffix: Callable[[int], str]) -> dict[str, Any]:
    """The scenario with suffix(i) appended to the i-th of every name and label it holds;
    the node a pod runs on, its selector and its tolerations follow."""
    out = copy.deepcopy(data)
    counter = iter(range(10_000))

    def more(text: str) -> str:
        return text + suffix(next(counter))

    nodes = {}
    for node in out["nodes"]:
        nodes[node["name"]] = node["name"] = more(node["name"])
        for card in node["cards"]:
            card["model"] = more(card.get("model", "card"))
        node["labels"] = {**node.get("labels", {}), "team": more("t")}
        for other in node.get("other_pods", []):
            other["name"] = more(other["name"])
    taints = {}
    for node in out["nodes"]:
        for taint in node.get("taints", []):
            taints[taint["value"]] = taint["value"] = more(taint["value"])
    # An autoscaler's target is Kind/namespace/name, with no room for a slash in a suffix:
    # the owner it targets keeps its name, so that its pods stay its replicas' template.
    targets = {a["target"] for a in out.get("autoscalers", [])}
    namespaces: dict[str, str] = {}
    for pod in out["pods"]:
        namespace, name = pod["name"].split("/")
        if namespace not in namespaces:
            namespaces[namespace] = more(namespace)
        pod["name"] = f"{namespaces[namespace]}/{more(name)}"
        if "node" in pod:
            pod["node"] = nodes[pod["node"]]
        if "owner" in pod and pod["owner"] not in targets:
            pod["owner"] = more(pod["owner"])
        pod["labels"] = {"app": more("a")}
        pod["annotations"] = {"note": more("n")}
        for toleration in pod.get("tolerations", []):
            toleration["value"] = taints.get(toleration.get("value"), toleration.get("value"))
    for autoscaler in out.get("autoscalers", []):  # last: the names above keep their suffixes
        namespace, name = autoscaler["name"].split("/")
        autoscaler["name"] = f"{namespace}/{more(name).replace('/', '')}"
    return out


class Structure(HTMLParser):
    """The elements of a page in order (name and attribute names), its links, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, tuple[str, ...]]] = []
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, tuple(name for name, _ in attrs)))
        links = [v or "" for k, v in attrs if k in {"href", "src", "action", "srcset"}]
        self.links += [_RUN.sub("RUN/", link) for link in links]  # the index's run folders

    def handle_comment(self, data: str) -> None:
        if data != " ":  # escape_cell's own, which splits an e-mail address from its link
            self.elements.append(("<!--", ()))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def structure(path: Path) -> Structure:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        text = cmarkgfm.github_flavored_markdown_to_html(
            text, options=cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE
        )
    parsed = Structure()
    parsed.feed(text)
    parsed.close()
    return parsed


PAGES = [
    "diagnose.md",
    "diagnose.html",
    "plan.md",
    "plan.html",
    "whatif.md",
    "report.md",
    "report.html",
    "index.html",
]


def outputs(scenario: Path, out: Path) -> dict[str, Path]:
    """Every Markdown and HTML page the commands write for `scenario`, by PAGES' names."""
    out.mkdir()
    written = []
    for command in ("diagnose", "plan", "whatif"):
        for fmt, suffix in (("markdown", "md"), ("html", "html")):
            if command == "whatif" and fmt == "html":
                continue  # whatif writes Markdown and JSON only
            path = out / f"{command}.{suffix}"
            argv = [command, "--scenario", str(scenario), "--format", fmt, "--output", str(path)]
            assert main(argv) == 0, argv
            written.append(path)
    assert main(["report", "--scenario", str(scenario), "--reports", str(out / "home")]) == 0
    (run,) = [p for p in (out / "home").iterdir() if p.is_dir()]
    written += [run / "report.md", run / "report.html", out / "home" / "index.html"]
    assert [p.name for p in written] == PAGES
    return {p.name: p for p in written}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    base = tmp_path_factory.mktemp("hostile-names")
    demo = yaml.safe_load(DEMO.read_text())
    runs = []
    for kind, suffix in (
        ("plain", lambda i: f"-s{i}"),
        ("hostile", lambda i: f"-s{i}{HOSTILE[i % len(HOSTILE)]}"),
    ):
        scenario = base / f"{kind}.json"
        scenario.write_text(json.dumps(dress(demo, suffix)))
        runs.append(outputs(scenario, base / kind))
    plain, hostile = runs
    return {name: (plain[name], hostile[name]) for name in PAGES}


def test_the_dressed_demo_decides_as_the_demo(tmp_path: Path) -> None:
    """The suffixes change no decision: the same causes, counted the same."""
    demo = yaml.safe_load(DEMO.read_text())
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(dress(demo, lambda i: HOSTILE[i % len(HOSTILE)])))
    causes = []
    for scenario in (DEMO, hostile):
        out = tmp_path / f"{scenario.stem}.json"
        argv = ["diagnose", "--scenario", str(scenario), "--format", "json", "--output", str(out)]
        assert main(argv) == 0
        pods = json.loads(out.read_text())["pods"]
        causes.append(sorted(p["cause"] for p in pods))
    assert causes[0] == causes[1]


@pytest.mark.parametrize("page", PAGES)
def test_hostile_names_change_no_structure(pages: dict[str, tuple[Path, Path]], page: str) -> None:
    plain, hostile = pages[page]
    expected, found = structure(plain), structure(hostile)
    assert found.links == expected.links, hostile.name
    extra = [e for e in found.elements if e not in expected.elements]
    assert not extra, (hostile.name, extra[:5])
    assert found.elements == expected.elements, hostile.name


@pytest.mark.parametrize("page", [p for p in PAGES if p not in {"whatif.md", "index.html"}])
def test_hostile_names_are_shown_as_written(pages: dict[str, tuple[Path, Path]], page: str) -> None:
    """What the pages name (whatif and the index name no pod) reads as the cluster wrote it,
    a line break as a space."""
    text = "".join(structure(pages[page][1]).text)
    for hostile in ("<script>alert(1)</script>", "</td></tr><b>x", "[x](javascript:alert(1))"):
        assert hostile in text, (page, hostile)
