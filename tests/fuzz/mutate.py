"""Near-valid data made hostile: one to three edits at places drawn from the whole tree
(a value replaced, a key dropped or added, a list item repeated, a name emptied), so that
most examples get past the first checks and reach the deep ones."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from tests.fuzz.hostile import hostile_values

Place = tuple[Any, Any]  # (container, key or index)


def places(data: Any) -> list[Place]:
    """Every (container, key) of the tree, in a stable order, without recursion."""
    found: list[Place] = []
    stack = [data]
    while stack:
        node = stack.pop()
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for key, value in items:
            found.append((node, key))
            if isinstance(value, dict | list):
                stack.append(value)
    return found


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        spots = places(data)
        if not spots:
            break
        container, key = spots[draw(st.integers(0, len(spots) - 1))]
        edit = draw(st.sampled_from(["replace", "replace", "drop", "repeat", "add", "empty"]))
        if edit == "replace":
            container[key] = draw(hostile_values())
        elif edit == "drop":
            del container[key]
        elif edit == "repeat" and isinstance(container, list):
            container.append(copy.deepcopy(container[key]))  # a duplicate name or index
        elif edit == "add" and isinstance(container, dict):
            container[draw(st.sampled_from(["name", "index", "extra", "", "nodes"]))] = draw(
                hostile_values()
            )
        elif edit == "empty" and isinstance(container, dict) and "name" in container:
            container["name"] = draw(st.sampled_from(["", " ", "/", "a/"]))
    return data


@st.composite
def text_edits(draw: st.DrawFn, text: str) -> str:
    """Edits no data tree can express: a byte-order mark, a NUL, a line written twice (a
    key twice in one mapping), digits swapped for hostile ones, the text cut short, or
    nesting deeper than any parser's stack."""
    edit = draw(st.sampled_from(["none", "none", "bom", "nul", "twice", "digits", "cut", "deep"]))
    lines = text.splitlines(keepends=True) or [""]
    at = draw(st.integers(0, max(len(text) - 1, 0)))
    if edit == "bom":
        return "\ufeff" + text
    if edit == "nul":
        return text[:at] + "\x00" + text[at:]
    if edit == "twice":
        i = draw(st.integers(0, len(lines) - 1))
        return "".join(lines[: i + 1] + lines[i:])
    if edit == "digits":
        for i in range(at, len(text)):
            if text[i].isdigit():
                return (
                    text[:i] + draw(st.sampled_from(["²", "9" * 5000, "1e30", "٣"])) + text[i + 1 :]
                )
        return text
    if edit == "cut":
        return text[:at]
    if edit == "deep":
        levels = draw(st.sampled_from([65, 1100, 100_000]))
        return text[:at] + "[" * levels + "]" * levels + text[at:]
    return text
