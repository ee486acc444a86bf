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


# Where a value is: None for the top level, else (where its container is, its key or index).
# Built as a chain and spelled out only for an error: most scenarios hold none.
_Where = tuple[Any, str | int] | None


def check_values(data: object, source: str) -> None:
    """Depth, count and numbers, in one pass over each distinct mapping and list (a YAML
    alias repeats one: it is walked once, but counts as often as it appears), without
    recursion: the data may be as deep as the parsers allow."""
    height: dict[int, int] = {}  # id of a container -> levels it holds, itself included
    size: dict[int, int] = {}  # id of a container -> values in it, aliases expanded
    walking: set[int] = set()  # containers whose walk has begun but not ended
    # (value, where, the [levels, values] its children hold so far, its container's, ended)
    stack: list[tuple[Any, _Where, list[int], list[int] | None, bool]] = []
    top = [0, 0]
    if not _container(data):
        if (problem := _problem(data)) is not None:
            raise ScenarioError(f"{source}: {_place(None)}: {problem}")
        return
    stack.append((data, None, [0, 0], top, False))
    while stack:
        value, where, held, into, ended = stack.pop()
        key = id(value)
        if ended:
            walking.discard(key)
            levels, values = 1 + held[0], len(value) + held[1]
            height[key], size[key] = levels, values
            if levels > MAX_DEPTH:
                raise ScenarioError(
                    f"{source}: {_place(where)}: nested deeper than {MAX_DEPTH} levels"
                )
            if values > MAX_VALUES:
                raise ScenarioError(
                    f"{source}: {_place(where)}: more than {MAX_VALUES:,} values "
                    "(with YAML aliases expanded)"
                )
            _hold(into, levels, values)
            continue
        if key in height:  # an alias of a container walked since it was met
            _hold(into, height[key], size[key])
            continue
        if key in walking:
            raise ScenarioError(
                f"{source}: {_place(where)}: holds itself (a YAML alias of its own)"
            )
        walking.add(key)
        stack.append((value, where, held, into, True))
        for name, item in value.items() if isinstance(value, Mapping) else enumerate(value):
            kind = type(item)
            if kind is str or item is None or kind is bool:
                continue
            if kind is dict or kind is list or _container(item):
                known = height.get(id(item))
                if known is not None:  # an alias of a container already walked
                    _hold(held, known, size[id(item)])
                else:
                    stack.append((item, (where, _key(name)), [0, 0], held, False))
            elif (problem := _problem(item)) is not None:
                raise ScenarioError(f"{source}: {_place((where, _key(name)))}: {problem}")


def _container(value: object) -> bool:
    return isinstance(value, Mapping | list)


def _hold(into: list[int] | None, levels: int, values: int) -> None:
    """A child of `levels` levels and `values` values, counted in its container's sums."""
    if into is not None:
        into[0] = max(into[0], levels)
        into[1] += values


def _place(where: _Where) -> str:
    keys: list[str | int] = []
    while where is not None:
        where, name = where
        keys.append(name)
    spelled = ""
    for name in reversed(keys):
        spelled = join(spelled, name)
    return spelled or "(top level)"


def _key(name: object) -> str | int:
    return name if isinstance(name, int) and not isinstance(name, bool) else str(name)


def _problem(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        return "an integer beyond int64"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    return None
