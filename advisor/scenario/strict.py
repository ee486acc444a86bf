"""Reading a parsed scenario strictly (`Reader`): every rejection is a `ScenarioError` that
names the file, the path inside it and the problem ('FILE: PATH: PROBLEM'), so a user can fix
the file from the one line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Counts, indexes and priorities (int32) and the memory of a card or request (1 EiB in MiB):
# one range for the pod parser and the scenario format, so a live run and its snapshot agree.
from advisor.core.quantity import MAX_COUNT, MAX_MEMORY_MIB
from advisor.scenario.errors import ScenarioError

__all__ = ["MAX_COUNT", "MAX_MEMORY_MIB", "UNREAD_MIB", "Reader", "join", "kind"]

# The memory of a request that could not be read: allowed only with a pod's `invalid`.
UNREAD_MIB = 0


class Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {where or '(top level)'}: {problem}")

    def mapping(
        self, value: object, where: str, allowed: set[str], required: set[str]
    ) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, f"expected a mapping, got {kind(value)}")
        for key in value:
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                raise self.fail(join(where, str(key)), f"unknown key (known: {known})")
        for key in sorted(required - set(value)):
            raise self.fail(join(where, key), "missing")
        return value

    def integer(self, value: object, where: str, minimum: int, maximum: int = MAX_COUNT) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"expected an integer, got {kind(value)}")
        if value < minimum:
            raise self.fail(where, f"must be at least {minimum}, got {_short(value)}")
        if value > maximum:
            raise self.fail(where, f"must be at most {maximum}, got {_short(value)}")
        return value

    def string(self, value: object, where: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"expected a non-empty string, got {kind(value)}")
        return value

    def boolean(self, value: object, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, f"expected true or false, got {kind(value)}")
        return value

    def sequence(self, value: object, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list, got {kind(value)}")
        return value


def _short(number: int) -> str:
    text = str(number) if abs(number) < 10**30 else f"a number of {len(str(abs(number)))} digits"
    return text


def kind(value: object) -> str:
    if value is None:
        return "nothing"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: f"the string {value!r}",
        list: "a list",
        dict: "a mapping",
    }.get(type(value), type(value).__name__)


def join(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key
