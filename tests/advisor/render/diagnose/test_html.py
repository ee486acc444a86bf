"""The HTML report's content, read back with the standard library's HTML parser."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from typing import Any

from advisor.render.common.style import CAUSE_COLOURS
from advisor.render.diagnose import render_html
from tests.advisor.render.sample_diagnosis import (
    SAMPLE_NODE_FIT,
    sample_diagnosis,
    sample_node_resources_pod,
    sample_view,
)

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;"\'`'


class Page(HTMLParser):
    """Every start tag with its attributes, and the text inside each element with an id."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._open_ids: list[tuple[str, int]] = []
        self._depth = 0
        self.by_id: dict[str, list[str]] = {}
        self.feed(document)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag in ("br", "meta", "img", "input", "link"):
            return
        self._depth += 1
        element_id = attributes.get("id")
        if element_id:
            self._open_ids.append((element_id, self._depth))
            self.by_id[element_id] = []

    def handle_endtag(self, tag: str) -> None:
        if self._open_ids and self._open_ids[-1][1] == self._depth:
            self._open_ids.pop()
        self._depth -= 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for element_id, _ in self._open_ids:
            self.by_id[element_id].append(data)

    def text_of(self, element_id: str) -> str:
        return " ".join(" ".join(self.by_id[element_id]).split())

    def with_class(self, name: str) -> list[dict[str, str | None]]:
        return [a for _, a in self.tags if name in (a.get("class") or "").split()]


def sample_page() -> tuple[str, Page]:
    document = render_html(sample_diagnosis(), sample_view())
    return document, Page(document)


def test_header_badges_count_each_cause() -> None:
    _, page = sample_page()
    text = " ".join("".join(page.text).split())
    assert "6 Pending GPU pods: 1 schedulable, 1 fragmentation, 2 capacity" in text
    badges = re.findall(
        r'<span class="badge[^"]*"[^>]*><b>(\d+)</b>([^<]+)</span>', sample_page()[0]
    )
    assert badges == [
        ("6", "Pending"),
        ("1", "schedulable"),
        ("0", "node-resources"),
        ("1", "fragmentation"),
        ("2", "capacity"),
        ("1", "unsatisfiable"),
        ("1", "invalid"),
    ]


def test_one_section_per_node_with_a_bar_per_card() -> None:
    document, page = sample_page()
    sections = [a.get("id") for t, a in page.tags if t == "section" and a.get("id")]
    assert sections == ["node-gpu-a100-01", "node-gpu-t4-01", "node-gpu-t4-02", "node-gpu-v100-01"]
    assert len(page.with_class("bar")) == 24
    # A segment's width is its share of the card: 12288 of 16384 MiB.
    assert 'style="width:75.000%;' in document.split('id="node-gpu-t4-02"')[1]
    unhealthy = page.with_class("unhealthy")
    assert len(unhealthy) == 1
    assert unhealthy[0].get("title") == "Tesla T4"


def test_pending_segments_are_marked_and_titled() -> None:
    _, page = sample_page()
    pending = page.with_class("pending")
    assert len(pending) == 2
    assert {a.get("title") for a in pending} == {
        "ml/bert-finetune: 8192 MiB (Pending, placed by this cycle)"
    }
    titles = {a.get("title") for a in page.with_class("seg")}
    assert "infer/chat-api-7f9c: 24576 MiB, 30 % core" in titles


def test_each_node_lists_the_pending_pods_that_concern_it() -> None:
    _, page = sample_page()
    v100 = page.text_of("node-gpu-v100-01")
    assert "ml/bert-finetune schedulable 2 × 8192 MiB placed by this cycle on cards 0, 1" in v100
    assert "card-memory: no card has 32768 MiB free" in v100
    assert "batch/etl-gpu capacity (scale up)" in v100
    t4 = page.text_of("node-gpu-t4-01")
    assert "vision/yolo-batch capacity (consolidate)" in t4
    assert "unhealthy: card 3" in t4
    assert "ml/bert-finetune" not in t4
    assert "No Pending pod involves this node." in page.text_of("node-gpu-t4-02")


def test_pending_table_has_every_pod_with_cause_and_message() -> None:
    document, _ = sample_page()
    table = Page(document.split("<table>", 1)[1])
    rows = " ".join("".join(table.text).split())
    for pod in sample_diagnosis()["pods"]:
        assert pod["pod"] in rows
        assert pod["message"] in rows or pod["cause"] == "schedulable"
    assert "fits on gpu-v100-01, cards 0, 1" in rows
    assert "2 nodes, 2 more not listed" in rows


def test_self_contained() -> None:
    document, page = sample_page()
    assert document.startswith("<!DOCTYPE html>")
    assert {tag for tag, _ in page.tags}.isdisjoint({"script", "link", "img", "iframe"})
    for needle in ("http://", "https://", "url(", "@import", "src="):
        assert needle not in document


def hostile_inputs() -> tuple[dict[str, Any], dict[str, Any]]:
    diagnosis = copy.deepcopy(sample_diagnosis())
    view = copy.deepcopy(sample_view())
    pod = diagnosis["pods"][1]
    pod["pod"] = "ns/" + HOSTILE
    pod["message"] = HOSTILE
    pod["node_summary"] = HOSTILE
    pod["nodes"] = {HOSTILE: [HOSTILE]}
    diagnosis["policy"] = {"node": HOSTILE, "card": HOSTILE}
    diagnosis["schema"] = HOSTILE
    diagnosis["pods"][0]["placement"] = {"node": HOSTILE, "cards": [0]}
    node = view["nodes"][0]
    node["name"] = HOSTILE
    node["cards"][0]["model"] = HOSTILE
    node["cards"][0]["allotments"][0]["pod"] = "ns/" + HOSTILE
    return diagnosis, view


def test_hostile_names_are_escaped_everywhere() -> None:
    diagnosis, view = hostile_inputs()
    document = render_html(diagnosis, view, title=HOSTILE)
    page = Page(document)
    assert {tag for tag, _ in page.tags}.isdisjoint({"script", "img"})
    for _, attributes in page.tags:
        assert not any(name.startswith("on") for name in attributes), attributes
    # The text survives intact for the reader, only as text.
    text = "".join(page.text)
    assert text.count(HOSTILE) >= 8
    assert "&lt;script&gt;" in document
    assert "<script" not in document.lower()
    # Tooltips carry it too, inside their quoted attribute.
    titles = [a.get("title") for a in page.with_class("seg")]
    assert f"ns/{HOSTILE}: 40960 MiB" in titles


def test_deterministic_and_tolerant_of_missing_keys() -> None:
    assert render_html(sample_diagnosis(), sample_view()) == render_html(
        sample_diagnosis(), sample_view()
    )
    minimal = render_html({"pods": [{"pod": "a/b"}]}, {"nodes": [{"name": "n", "cards": [{}]}]})
    page = Page(minimal)
    assert "a/b" in "".join(page.text)
    assert "1 Pending GPU pod" in "".join(page.text)
    assert render_html({}, {}).count("<section") == 1  # only the (empty) Pending pods panel


def test_node_resources_has_its_badge_tag_advice_and_node_notes() -> None:
    diagnosis = sample_diagnosis()
    diagnosis["pods"].append(sample_node_resources_pod())
    diagnosis["summary"]["node-resources"] = 1
    diagnosis["summary"]["pending"] += 1
    view = sample_view()
    for node in view["nodes"]:
        node.update(copy.deepcopy(SAMPLE_NODE_FIT.get(node["name"], {})))
    document = render_html(diagnosis, view)
    page = Page(document)
    cyan = CAUSE_COLOURS["node-resources"]
    assert f'<span class="badge" style="background:{cyan}"><b>1</b>node-resources</span>' in (
        document
    )
    assert f'<span class="tag" style="background:{cyan}">node-resources</span>' in document
    assert f'<div style="border-color:{cyan}"><strong>Node resources</strong>' in document
    assert "1 × 16384 MiB · cpu 24, memory 96Gi" in page.text
    a100 = page.text_of("node-gpu-a100-01")
    assert "cpu 88 of 94 requested" in a100
    assert "memory 300 of 720 GiB requested" in a100
    assert "Insufficient cpu: 6 free, pod needs 24" in a100  # the pod, among the node's
    assert "taint nvidia.com/gpu=present:NoSchedule" in page.text_of("node-gpu-t4-02")
    assert "cordoned" in page.text_of("node-gpu-v100-01")
    assert "requested" not in page.text_of("node-gpu-t4-01")  # nothing known of it


def test_odd_node_figures_are_left_out_not_shown_as_zero() -> None:
    view = sample_view()
    view["nodes"][0]["resources"] = {
        "cpu_allocatable_milli": "lots",
        "memory_allocatable_bytes": True,
        "cpu_requested_milli": None,
    }
    view["nodes"][0]["taints"] = "not a list"
    view["nodes"][0]["unschedulable"] = "yes"
    document = render_html(sample_diagnosis(), view)
    text = Page(document).text_of("node-gpu-a100-01")
    assert "requested" not in text
    assert "taint" not in text
    assert "cordoned" not in text
