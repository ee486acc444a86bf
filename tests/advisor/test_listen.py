"""`[HOST]:PORT`, the one listen-address grammar of both programs."""

from __future__ import annotations

import pytest

from advisor.listen import parse_listen


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":19400", (None, 19400)),
        ("0.0.0.0:0", ("0.0.0.0", 0)),
        ("[::1]:65535", ("::1", 65535)),
        ("localhost:9091", ("localhost", 9091)),
    ],
)
def test_addresses_the_programs_accept(text: str, expected: tuple[str | None, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "19400",  # no colon
        ":",  # no port
        ":65536",  # one past the largest port
        ":99999999999999999999",  # beyond any port, and int() must not be asked to
        ":²",  # str.isdigit() says yes, int() says no
        ":٣",  # an Arabic-Indic digit: int() would read it as 3
        ":-1",
        ":80 ",
    ],
)
def test_anything_else_is_one_line_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="expected \\[HOST\\]:PORT") as caught:
        parse_listen(text)
    assert repr(text) in str(caught.value)
    assert "\n" not in str(caught.value)
