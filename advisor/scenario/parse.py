"""Scenario text to plain data, within bounds (the text is read within its own by
`scenario.text`): YAML or JSON nested at most MAX_DEPTH deep, at most MAX_VALUES values once
YAML aliases are expanded, no key twice in one mapping, integers within int64 and floats
finite. Each refusal is one `ScenarioError` line naming the file, the place and the problem.

Both parsers keep Python's own recursion limit under the bound: libyaml stops at 1,000
levels, `json` raises RecursionError (caught here) past about as many.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import yaml

from advisor.scenario.errors import ScenarioError
from advisor.scenario.strict import join

MAX_DEPTH = 64
MAX_VALUES = 16 * 2**20  # after YAML aliases: 3 bytes of "*a," may stand for a whole node
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# libyaml when present: a 1 MB scenario parses in 0.3 s instead of 15 s.
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"


class _StrictLoader(_BaseLoader):  # type: ignore[misc]  # libyaml's loader has no stubs
    """The safe loader, refusing a key written twice in one mapping (PyYAML keeps the last
    silently). Keys merged in with `<<` may still be overridden, as YAML intends."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping


class _DuplicateKey(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping: dict[str, Any] = {}
    for key, value in pairs:
        if key in mapping:
            raise _DuplicateKey(key)
        mapping[key] = value
    return mapping


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a scenario may hold")


def parse_text(text: str, source: str) -> object:
    """The data of a scenario's text (JSON when `source` ends in .json, else YAML),
    checked by `check_values`."""
    deep = f"nested deeper than {MAX_DEPTH} levels"
    try:
        if source.endswith(".json"):
            data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
        else:
            data = yaml.load(text, Loader=_StrictLoader)
    except json.JSONDecodeError as err:
        raise ScenarioError(f"{source}: line {err.lineno} column {err.colno}: {err.msg}") from None
    except _DuplicateKey as err:
        raise ScenarioError(f"{source}: (parse): duplicate key {err.args[0]!r}") from None
    except yaml.reader.ReaderError as err:
        raise ScenarioError(
            f"{source}: position {err.position}: unacceptable character #x{err.character:04x}"
        ) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "(parse)"
        problem = getattr(err, "problem", None) or str(err)
        if "maximum nesting depth" in problem:
            problem = deep
        raise ScenarioError(f"{source}: {where}: {_first_line(problem)}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: (parse): {deep}") from None
    except ValueError as err:  # an integer of thousands of digits, NaN or Infinity in JSON
        raise ScenarioError(f"{source}: (parse): {_first_line(str(err))}") from None
    check_values(data, source)
    return data


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def check_values(data: object, source: str) -> None:
    """Depth, count and numbers, in one pass over each distinct mapping and list (a YAML
    alias repeats one: it is walked once, but counts as often as it appears), without
    recursion: the data may be as deep as the parsers allow."""
    height: dict[int, int] = {}  # id of a container -> levels it holds, itself included
    size: dict[int, int] = {}  # id of a container -> values in it, aliases expanded
    walking: set[int] = set()  # containers whose walk has begun but not ended
    stack: list[tuple[object, str, bool]] = [(data, "", False)]
    while stack:
        value, where, ended = stack.pop()
        place = where or "(top level)"
        if not isinstance(value, Mapping | list):  # only the top level can be one
            if (problem := _problem(value)) is not None:
                raise ScenarioError(f"{source}: {place}: {problem}")
            continue
        key = id(value)
        if ended:
            children = [c for _, c in _items(value) if isinstance(c, Mapping | list)]
            walking.discard(key)
            height[key] = 1 + max((height[id(c)] for c in children), default=0)
            size[key] = len(value) + sum(size[id(c)] for c in children)
            if height[key] > MAX_DEPTH:
                raise ScenarioError(f"{source}: {place}: nested deeper than {MAX_DEPTH} levels")
            if size[key] > MAX_VALUES:
                raise ScenarioError(
                    f"{source}: {place}: more than {MAX_VALUES:,} values "
                    "(with YAML aliases expanded)"
                )
            continue
        if key in height:
            continue  # an alias of a container already walked
        if key in walking:
            raise ScenarioError(f"{source}: {place}: holds itself (a YAML alias of its own)")
        walking.add(key)
        stack.append((value, where, True))
        for name, item in _items(value):
            if isinstance(item, Mapping | list):
                stack.append((item, join(where, _key(name)), False))
            elif (problem := _problem(item)) is not None:
                raise ScenarioError(f"{source}: {join(where, _key(name))}: {problem}")


def _key(name: object) -> str | int:
    return name if isinstance(name, int) and not isinstance(name, bool) else str(name)


def _items(value: Mapping[Any, Any] | list[Any]) -> list[tuple[Any, Any]]:
    return list(value.items()) if isinstance(value, Mapping) else list(enumerate(value))


def _problem(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        return "an integer beyond int64"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    return None
