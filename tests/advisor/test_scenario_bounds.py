"""Scenario input out of bounds: too big, too deep, numbers out of the model's range, keys
written twice. Each is refused in one line naming the file, the place and the problem
(exit 2 from the CLI, no traceback), never a RecursionError or OverflowError; and what the
advisor writes, it reads back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.cli import main
from advisor.core.model import Card, Cluster, Node, Placement, Pod, Request
from advisor.defaults import MAX_SCENARIO_BYTES
from advisor.scenario import (
    ScenarioError,
    load_scenario,
    parse,
    save_scenario,
    scenario_from_data,
    scenario_to_data,
)
from advisor.scenario.parse import MAX_DEPTH, check_values, parse_text
from advisor.scenario.strict import MAX_COUNT, MAX_MEMORY_MIB
from tests.fastloop import examples


def scenario(**card: Any) -> dict[str, Any]:
    return {
        "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384, **card}]}],
        "pods": [{"name": "a/wait", "request": {"gpus": 1, "memory_mib": 4096}}],
    }


def refused(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- nesting ------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deep_json_is_one_line(tmp_path: Path, depth: int) -> None:
    path = write(tmp_path / "deep.json", '{"nodes": ' + "[" * depth + "]" * depth + "}")
    assert refused(path).endswith(f"nested deeper than {MAX_DEPTH} levels")


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deep_yaml_is_one_line(tmp_path: Path, depth: int) -> None:
    flow = write(tmp_path / "flow.yaml", "nodes: " + "[" * depth + "]" * depth + "\n")
    assert refused(flow).endswith(f"nested deeper than {MAX_DEPTH} levels")


@pytest.mark.parametrize("depth", [100, 1_500])  # libyaml itself stops at 1,000
def test_deep_block_yaml_is_one_line(tmp_path: Path, depth: int) -> None:
    block = write(tmp_path / "block.yaml", "".join(" " * i + "a:\n" for i in range(depth)))
    assert refused(block).endswith(f"nested deeper than {MAX_DEPTH} levels")


def test_the_depth_bound_is_exact() -> None:
    """MAX_DEPTH containers inside one another pass; one more is refused, naming where."""
    ok: Any = []
    for _ in range(MAX_DEPTH - 2):
        ok = [ok]
    check_values({"nodes": ok}, "s")  # 64 levels: the mapping and 63 lists
    with pytest.raises(ScenarioError, match=r"^s: \(top level\): nested deeper than 64"):
        check_values({"nodes": [ok]}, "s")
    with pytest.raises(ScenarioError, match=r"^s: nodes: nested deeper than 64"):
        check_values({"nodes": [[ok]]}, "s")  # the list under nodes holds 65 levels


def test_a_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    """Nine levels of ten aliases each: 10**9 values from a few hundred bytes."""
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for level in range(1, 10):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    path = write(tmp_path / "bomb.yaml", "\n".join(lines) + "\nnodes: *a9\n")
    assert "more than 16,777,216 values (with YAML aliases expanded)" in refused(path)


def test_a_yaml_structure_holding_itself_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "loop.yaml", "nodes: &loop [*loop]\n")
    assert refused(path) == "nodes[0]: holds itself (a YAML alias of its own)"


def _expanded(value: Any) -> tuple[int, int]:
    """(levels, values) of `value` with every shared container counted where it appears."""
    if isinstance(value, dict | list):
        children = [_expanded(c) for c in (value.values() if isinstance(value, dict) else value)]
        return (
            1 + max((c[0] for c in children), default=0),
            len(value) + sum(c[1] for c in children),
        )
    return (0, 0)


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_depth_and_count_as_if_every_alias_were_written_out(data: st.DataObject) -> None:
    """Random data sharing containers, as YAML aliases do: refused exactly when the data
    with every alias written out is too deep or holds too many values."""
    made: list[Any] = [1, "x", None]
    for _ in range(data.draw(st.integers(1, 12))):
        picks = data.draw(st.lists(st.sampled_from(made), max_size=4))
        if data.draw(st.booleans()):
            made.append(list(picks))
        else:
            made.append({f"k{i}": v for i, v in enumerate(picks)})
    top = made[-1]
    depth, values = data.draw(st.integers(1, 8)), data.draw(st.integers(1, 200))
    levels, count = _expanded(top)
    with patch.object(parse, "MAX_DEPTH", depth), patch.object(parse, "MAX_VALUES", values):
        if levels > depth or count > values:
            with pytest.raises(ScenarioError, match=r"nested deeper|more than"):
                check_values(top, "s")
        else:
            check_values(top, "s")


# -- numbers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("card", "message"),
    [
        ({"memory_mib": 2**63}, "nodes[0].cards[0].memory_mib: an integer beyond int64"),
        ({"memory_mib": -(2**63) - 1}, "nodes[0].cards[0].memory_mib: an integer beyond int64"),
        (
            {"memory_mib": 2**63 - 1},
            f"nodes[0].cards[0].memory_mib: must be at most {MAX_MEMORY_MIB}",
        ),
        ({"index": 2**40}, f"nodes[0].cards[0].index: must be at most {MAX_COUNT}"),
        ({"numa": 2**31}, f"nodes[0].cards[0].numa: must be at most {MAX_COUNT}"),
        ({"max_vgpus": 2**62}, f"nodes[0].cards[0].max_vgpus: must be at most {MAX_COUNT}"),
    ],
)
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_integers_beyond_the_model_are_one_line(
    tmp_path: Path, card: dict[str, int], message: str, suffix: str
) -> None:
    path = tmp_path / f"s{suffix}"
    data = scenario(**card)
    write(path, json.dumps(data) if suffix == ".json" else yaml.safe_dump(data))
    assert refused(path).startswith(message)


def test_priority_and_request_bounds(tmp_path: Path) -> None:
    data = scenario()
    data["pods"][0]["priority"] = -(2**31) - 1  # below int32, as Kubernetes keeps it
    assert refused(write(tmp_path / "p.yaml", yaml.safe_dump(data))).startswith(
        "pods[0].priority: must be at least -2147483648"
    )
    data = scenario()
    data["pods"][0]["request"]["memory_mib"] = MAX_MEMORY_MIB + 1
    assert refused(write(tmp_path / "m.yaml", yaml.safe_dump(data))).startswith(
        "pods[0].request.memory_mib: must be at most"
    )


def test_an_integer_of_thousands_of_digits_is_one_line(tmp_path: Path) -> None:
    digits = "9" * 5000
    for suffix in (".yaml", ".json"):
        text = json.dumps(scenario()).replace("16384", digits)
        assert "(parse): Exceeds the limit (4300 digits)" in refused(
            write(tmp_path / f"s{suffix}", text)
        )


@pytest.mark.parametrize(
    ("suffix", "value", "message"),
    [
        (".yaml", ".nan", "nodes[0].cards[0].memory_mib: nan is not a finite number"),
        (".yaml", "-.inf", "nodes[0].cards[0].memory_mib: -inf is not a finite number"),
        (".json", "NaN", "(parse): NaN is not a number a scenario may hold"),
        (".json", "-Infinity", "(parse): -Infinity is not a number a scenario may hold"),
        (".json", "1e400", "nodes[0].cards[0].memory_mib: inf is not a finite number"),
    ],
)
def test_non_finite_numbers_are_one_line(
    tmp_path: Path, suffix: str, value: str, message: str
) -> None:
    text = json.dumps(scenario()).replace("16384", value)
    assert refused(write(tmp_path / f"s{suffix}", text)) == message


# -- duplicate keys -----------------------------------------------------------------------


def test_a_yaml_key_written_twice_is_refused_where_it_is(tmp_path: Path) -> None:
    text = "nodes:\n- name: n1\n  name: n2\n  cards: [{index: 0, memory_mib: 1}]\n"
    assert refused(write(tmp_path / "s.yaml", text)) == "line 3 column 3: duplicate key 'name'"
    flow = "nodes: [{name: n1, cards: [{index: 0, index: 1, memory_mib: 1}]}]\n"
    # the second `index` starts after 38 characters: column 39
    assert refused(write(tmp_path / "f.yaml", flow)) == "line 1 column 39: duplicate key 'index'"


def test_a_json_key_written_twice_is_refused(tmp_path: Path) -> None:
    text = '{"nodes": [], "pods": [], "nodes": []}'
    assert refused(write(tmp_path / "s.json", text)) == "(parse): duplicate key 'nodes'"


def test_yaml_merge_keys_may_still_be_overridden(tmp_path: Path) -> None:
    text = (
        "card: &card {index: 0, memory_mib: 8192}\n"
        "nodes: [{name: n1, cards: [{<<: *card, memory_mib: 16384}]}]\n"
    )
    data = parse_text(text, "s.yaml")
    assert data == {
        "card": {"index": 0, "memory_mib": 8192},
        "nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16384}]}],
    }


# -- size and bytes -----------------------------------------------------------------------


def test_a_file_over_the_cap_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as out:
        out.truncate(MAX_SCENARIO_BYTES + 1)  # sparse: no 64 MiB written
    assert (
        refused(path)
        == "(file): 67,108,865 bytes, more than the 67,108,864 bytes a scenario may have "
        "(--scenario.max-bytes)"
    )


def test_an_endless_stream_is_read_up_to_the_cap_only() -> None:
    path = Path("/dev/zero")
    assert (
        refused(path)
        == "(file): more than the 67,108,864 bytes a scenario may have (--scenario.max-bytes)"
    )


def test_a_nul_byte_in_yaml_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "nodes: []\x00\n")
    assert refused(path) == "position 9: unacceptable character #x0000"


def test_bytes_that_are_not_utf8_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(b"nodes: [\xff]\n")
    assert refused(path) == "(file): not UTF-8 text (byte 8)"


def test_a_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(scenario()).encode())
    assert len(load_scenario(path).nodes) == 1


# -- through the CLI ----------------------------------------------------------------------


@pytest.mark.realservices  # xgpu-advisor as a process
def test_the_cli_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    deep = write(tmp_path / "deep.json", "[" * 100_000 + "]" * 100_000)
    for command in ("diagnose", "plan", "whatif", "report"):
        args = [command, "--scenario", str(deep)]
        if command == "report":
            args += ["--output-dir", str(tmp_path / "out")]
        done = subprocess.run(
            [sys.executable, "-m", "advisor.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            f"xgpu-advisor: error: {deep}: (parse): nested deeper than {MAX_DEPTH} levels\n"
        )


def test_an_escape_sequence_in_a_scenario_reaches_stderr_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = scenario()
    data["pods"][0]["x\x1b]0;pwned\x07"] = 1  # an unknown key: the message names it as is
    path = write(tmp_path / "s.json", json.dumps(data))
    assert main(["diagnose", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert "pods[0].x\\x1b]0;pwned\\x07: unknown key" in err
    assert "\x1b" not in err
    assert "\x07" not in err
    assert err.count("\n") == 1


# -- round trips --------------------------------------------------------------------------


HOSTILE_STRINGS = ["yes", "null", "1e3", "0x10", "~", "- a", "a: b", "#x", "'q'", '"d"', "é\u202e"]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_what_save_writes_load_reads_whatever_the_strings(tmp_path: Path, suffix: str) -> None:
    """Strings YAML would read as something else, control characters, the largest numbers
    the model takes: written and read back unchanged."""
    cards = (Card(0, MAX_MEMORY_MIB, "yes"), Card(MAX_COUNT, 1, "null\n\x1b[0m"))
    waiting = [
        Pod(f"ns/{text}", Request(1, 1), priority=-(2**31), annotations={text: text})
        for text in HOSTILE_STRINGS
    ]
    running = Pod(
        "ns/runs",
        Request(1, MAX_MEMORY_MIB),
        Placement("node: 1", (0,)),
        priority=MAX_COUNT,
        owner="ReplicaSet/ns/x\ty",
    )
    pods = (*waiting, running)
    cluster = Cluster((Node("node: 1", cards),), pods)
    path = tmp_path / f"s{suffix}"
    save_scenario(path, cluster)
    assert load_scenario(path) == cluster


def test_a_cluster_the_loader_would_refuse_fails_the_check_snapshot_makes_before_writing() -> None:
    """`snapshot` checks `scenario_from_data(scenario_to_data(cluster))` before it writes:
    a live source that reported a card of 2**70 MiB ends there (exit 2), not in a file every
    command then refuses."""
    cluster = Cluster((Node("n1", (Card(0, 2**70),)),), ())
    with pytest.raises(ScenarioError, match=r"^snap: nodes\[0\]\.cards\[0\]\.memory_mib: must"):
        scenario_from_data(scenario_to_data(cluster), "snap")
