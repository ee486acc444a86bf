"""`dumps_indented` writes exactly what `json.dumps(value, indent=...)` writes: the report's
JSON file stays byte-identical while it is written faster."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.output import jsontext
from advisor.output.jsontext import dumps_indented
from tests.fastloop import examples

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
KEYS = st.text() | st.integers() | st.floats() | st.booleans() | st.none()
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=examples(300), deadline=None)
@given(VALUES, st.sampled_from([0, 1, 2, 4]))
def test_the_same_text_as_json(value: Any, indent: int) -> None:
    assert dumps_indented(value, indent) == json.dumps(value, indent=indent)


@settings(max_examples=examples(200), deadline=None)
@given(VALUES, st.integers(0, 5), st.sampled_from(["", "\n"]))
def test_the_same_text_joined_a_few_pieces_at_a_time(value: Any, chunk: int, end: str) -> None:
    with patch.object(jsontext, "CHUNK_PIECES", chunk):
        assert dumps_indented(value, 2, end) == json.dumps(value, indent=2) + end


def test_edge_values() -> None:
    value = {
        "nan": float("nan"),
        "inf": [float("inf"), -float("inf"), -0.0, 1e300, 10**30],
        "empty": [[], {}, ()],
        "text": 'é\n"\\\u2028',
        1: True,
        False: "key false",
        2.5: False,
        None: None,
        0.5: "half",
    }
    assert dumps_indented(value) == json.dumps(value, indent=2)


def test_subclasses_as_json_writes_them() -> None:
    class Count(int):
        pass

    class Name(str):
        pass

    class Table(dict[str, Any]):
        pass

    value = Table(a=Count(3), b=[Name("x")], c=(1, 2))
    assert dumps_indented(value) == json.dumps(value, indent=2)


def test_what_json_refuses_is_refused() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"a": {1, 2}})
    with pytest.raises(TypeError, match="keys must be"):
        dumps_indented({(1, 2): 3})
