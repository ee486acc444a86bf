"""`json.dumps(value, indent=2)`, the same text, in a third of the time.

With `indent` the standard library leaves its C encoder for a pure-Python generator per
container, which on the 5,000-node report (23 MiB of JSON, mostly the card view) takes over
a second. This walks the value once into a list of pieces, strings escaped by the C escaper
json itself uses. Same rules as `json.dumps`'s defaults: keys str, int, float, bool or None;
NaN and infinities written as JavaScript names; tuples as lists; any other value refused
with json's own TypeError (there is no circularity check: a value holding itself recurses
until Python's limit).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

_INFINITY = float("inf")


# Pieces are joined into one string every this many: a large report is millions of short
# pieces, each an object of its own, and the list of them took more memory than the text.
CHUNK_PIECES = 65_536


def dumps_indented(value: Any, indent: int = 2, end: str = "") -> str:
    """Exactly `json.dumps(value, indent=indent) + end`."""
    writer = _Writer([], " " * indent)
    writer.value(value, "\n")
    return "".join([*writer.chunks, "".join(writer._pieces), end])


def _float(number: float) -> str:
    if number != number:
        return "NaN"
    if number == _INFINITY:
        return "Infinity"
    if number == -_INFINITY:
        return "-Infinity"
    return float.__repr__(number)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return encode_basestring_ascii(key)
    if isinstance(key, float):
        return encode_basestring_ascii(_float(key))
    if key is True:
        return '"true"'
    if key is False:
        return '"false"'
    if key is None:
        return '"null"'
    if isinstance(key, int):
        return encode_basestring_ascii(int.__repr__(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


class _Writer:
    __slots__ = ("_keys", "_pieces", "_step", "chunks")

    def __init__(self, pieces: list[str], step: str) -> None:
        self._pieces = pieces
        self._step = step
        self.chunks: list[str] = []  # the pieces so far, joined CHUNK_PIECES at a time
        self._keys: dict[str, str] = {}  # a report repeats few keys many times

    def value(self, value: Any, newline: str) -> None:
        """`value` at the depth whose line start (newline and indent) is `newline`."""
        kind = type(value)
        if kind is str:
            self._pieces.append(encode_basestring_ascii(value))
        elif kind is int:
            self._pieces.append(int.__repr__(value))
        elif kind is dict:
            self._dict(value, newline)
        elif kind is list:
            self._list(value, newline)
        elif kind is float:
            self._pieces.append(_float(value))
        else:
            self._other(value, newline)

    def _other(self, value: Any, newline: str) -> None:
        """What `value` does not take at once, in json's order of checks (subclasses too)."""
        if isinstance(value, str):
            self._pieces.append(encode_basestring_ascii(value))
        elif value is None:
            self._pieces.append("null")
        elif value is True:
            self._pieces.append("true")
        elif value is False:
            self._pieces.append("false")
        elif isinstance(value, int):
            self._pieces.append(int.__repr__(value))
        elif isinstance(value, float):
            self._pieces.append(_float(value))
        elif isinstance(value, list | tuple):
            self._list(value, newline)
        elif isinstance(value, dict):
            self._dict(value, newline)
        else:
            json.dumps(value)  # json's own TypeError for what it cannot write
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    def _list(self, items: list[Any] | tuple[Any, ...], newline: str) -> None:
        if not items:
            self._pieces.append("[]")
            return
        inner = newline + self._step
        separator = "," + inner
        pieces = self._pieces
        pieces.append("[" + inner)
        first = True
        for item in items:
            if not first:
                pieces.append(separator)
            first = False
            self.value(item, inner)
        pieces.append(newline + "]")
        if len(pieces) > CHUNK_PIECES:
            self._join()

    def _join(self) -> None:
        self.chunks.append("".join(self._pieces))
        self._pieces.clear()

    def _dict(self, mapping: dict[Any, Any], newline: str) -> None:
        if not mapping:
            self._pieces.append("{}")
            return
        inner = newline + self._step
        separator = "," + inner
        pieces, keys = self._pieces, self._keys
        pieces.append("{" + inner)
        first = True
        for key, item in mapping.items():
            text = keys.get(key) if type(key) is str else None
            if text is None:
                text = _key(key) + ": "
                if type(key) is str:
                    keys[key] = text
            if not first:
                text = separator + text
            first = False
            kind = type(item)  # the scalars inline: most values of a report
            if kind is str:
                pieces.append(text + encode_basestring_ascii(item))
            elif kind is int:
                pieces.append(text + int.__repr__(item))
            else:
                pieces.append(text)
                self.value(item, inner)
        pieces.append(newline + "}")
        if len(pieces) > CHUNK_PIECES:
            self._join()
