"""The access flags' values on their own: selectors, headers, credential files, sizes, and
what the checks of a series say."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from advisor.commands.flags.values import byte_size
from advisor.errors import InputError
from advisor.sources.access import load_access, parse_header, parse_selector
from advisor.sources.http import shown_url
from advisor.sources.prometheus import families
from advisor.sources.series import label_problem, number, series_name, value_problem


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ('cluster="prod-a"', 'cluster="prod-a"'),
        ('{cluster="prod-a"}', 'cluster="prod-a"'),
        (' cluster = "a" , env!~"dev.*" ', 'cluster="a",env!~"dev.*"'),
        ("region=~'eu-.*'", "region=~'eu-.*'"),
        ('name!="a\\"b"', 'name!="a\\"b"'),  # an escaped quote stays inside the string
        ("k=`raw {x}`", "k=`raw {x}`"),
    ],
)
def test_selectors_in_canonical_form(given: str, canonical: str) -> None:
    assert parse_selector(given) == canonical


@pytest.mark.parametrize(
    "given",
    [
        'cluster="a"} or vector(1',  # PromQL riding along
        'cluster="a") or up{x="1"',
        "cluster=a",  # unquoted
        'cluster="a',  # unterminated
        '1abc="a"',  # not a label name
        'cluster=="a"',
        "{}",
        "",
    ],
)
def test_anything_but_matchers_is_refused(given: str) -> None:
    with pytest.raises(InputError, match=r"--prometheus\.selector"):
        parse_selector(given)


def test_every_query_of_the_current_state_selects_with_the_matchers() -> None:
    select = load_access(selector='cluster="a"').select
    for family in families(select):
        for expr in (family.value, family.newest):
            assert f'{family.metric}{{cluster="a"}}' in expr
            assert expr.count(family.metric) == 1


def test_headers() -> None:
    assert parse_header("X-Scope-OrgID: team-a") == ("X-Scope-OrgID", "team-a")
    assert parse_header("X-Token:a:b") == ("X-Token", "a:b")  # only the first colon splits
    for bad in ("no colon at all", ": value", "Bad Name: v", "Host: evil", "X-A:", "X-A: a\rb"):
        with pytest.raises(InputError) as raised:
            parse_header(bad)
        assert "value" not in str(raised.value).split(":", 1)[0]  # the flag, then the reason
        assert "evil" not in str(raised.value)
        assert "a\rb" not in str(raised.value)


def test_bearer_token_becomes_an_authorization_header(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("abc.def-123\n")
    access = load_access(bearer_token_file=str(token))
    assert access.headers == (("Authorization", "Bearer abc.def-123"),)
    assert "abc.def" not in repr(access)  # never in a log line by accident


def test_basic_auth_file_keeps_colons_in_the_password(tmp_path: Path) -> None:
    secret = tmp_path / "basic"
    secret.write_text("user:p:a:ss\n")
    access = load_access(basic_auth_file=str(secret))
    # base64("user:p:a:ss") = "dXNlcjpwOmE6c3M="
    assert access.headers == (("Authorization", "Basic dXNlcjpwOmE6c3M="),)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty"),
        (b"\n\n", "empty"),
        (b"two\nlines", "holds control characters (one line expected)"),
        (b"\xff\xfe", "not UTF-8 text"),
        (b"x" * (64 * 1024 + 1), "larger than 64 KiB"),
    ],
)
def test_unusable_token_files(tmp_path: Path, content: bytes, problem: str) -> None:
    token = tmp_path / "token"
    token.write_bytes(content)
    with pytest.raises(InputError) as raised:
        load_access(bearer_token_file=str(token))
    assert str(raised.value) == f"--prometheus.bearer-token-file {token}: {problem}"


def test_a_missing_token_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(InputError, match=f"^--prometheus.bearer-token-file {missing}: No such"):
        load_access(bearer_token_file=str(missing))


def test_credentials_twice(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t")
    with pytest.raises(InputError, match="give one"):
        load_access(bearer_token_file=str(token), basic_auth_file=str(token))
    with pytest.raises(InputError, match="credentials given twice"):
        load_access(bearer_token_file=str(token), headers=("Authorization: Basic x",))


@pytest.mark.parametrize(
    ("text", "size"),
    [("1048576", 2**20), ("512KiB", 512 * 2**10), ("64MiB", 64 * 2**20), ("1GiB", 2**30)],
)
def test_sizes(text: str, size: int) -> None:
    assert byte_size(text) == size


@pytest.mark.parametrize("text", ["0", "-1", "1.5MiB", "nan", "1TiB", "65GiB", "²", "MiB", ""])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        byte_size(text)


def test_urls_are_shown_without_credentials() -> None:
    assert shown_url("https://u:p@prom.example:9090/x") == "https://prom.example:9090/x"
    assert shown_url("http://prom:9090") == "http://prom:9090"
    assert shown_url("http://u:p@[::1]:9090") == "http://[::1]:9090"


def test_series_checks() -> None:
    assert number("1e3") == 1000.0
    assert number("abc") is None
    assert number(True) is None  # a JSON boolean is not a sample value
    nan = number("NaN")
    assert nan is not None
    assert math.isnan(nan)
    assert value_problem(number("abc"), "abc") == "value 'abc' is not a number"
    assert value_problem(nan, "NaN") == "value nan is not a finite number"
    assert value_problem(-1.0, "-1") == "value -1 is negative"
    # 1e30 bytes is beyond the scenario format's largest card, 2**40 MiB = 2**60 bytes.
    assert value_problem(1e30, "1e30") == "value 1e+30 is beyond any card (at most 1.15292e+18)"
    assert value_problem(2.0**60, "") is None
    assert label_problem("xgpu_memory_total", {"node": "n", "gpu_index": "0"}) == (
        "label namespace, pod missing"
    )
    assert label_problem("xgpu_node_info", {"node": "n"}) is None
    assert series_name("m", {"b": 'x"y', "a": "\x1b[31m"}) == 'm{a="\\x1b[31m",b="x\\"y"}'
