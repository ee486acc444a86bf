"""exporter.cli's flags: durations, the Kubernetes back-off and the Xid hold, and what a bad
value does (one line on stderr, exit status 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from advisor import metricnames
from exporter.cli import DEFAULT_PORT, build, duration, main, parse_args
from exporter.metrics import FAMILY_GROUPS
from exporter.pods_kube import KubePodSource
from tests.realparts import DEMO, REPO, start_exporter

BASE = ["--node", "gpu-node-1", "--no-collector.nvml", "--no-collector.kubernetes"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2", 2.0),
        ("0.5", 0.5),
        (".25", 0.25),
        ("0", 0.0),
        ("500ms", 0.5),
        ("30s", 30.0),
        ("5m", 300.0),
        ("1.5h", 5400.0),
        # the advisor's grammar too (advisor.durations): Prometheus's, several units in a row
        ("1h30m", 5400.0),  # 3600 + 30 * 60
        ("1d", 86400.0),
    ],
)
def test_durations_are_seconds_or_carry_a_unit(text: str, seconds: float) -> None:
    assert duration(text) == pytest.approx(seconds)


def test_defaults_match_the_back_off_and_hold_the_code_uses() -> None:
    args = parse_args(["--node", "n"])
    assert (args.backoff_initial, args.backoff_max) == (0.5, 30.0)
    assert (args.call_timeout, args.freshness, args.timeout) == (2.0, 1.0, 3.0)


def test_default_xid_hold_outlasts_the_card_unhealthy_alert() -> None:
    """One critical Xid must keep the card unhealthy long enough to fire XGPUCardUnhealthy."""
    rules = yaml.safe_load((REPO / "deploy" / "rules" / "xgpu.rules.yaml").read_text())
    alert = next(
        r for g in rules["groups"] for r in g["rules"] if r.get("alert") == "XGPUCardUnhealthy"
    )
    assert parse_args(["--node", "n"]).xid_hold > duration(alert["for"])


def test_new_flags_take_both_spellings() -> None:
    args = parse_args(
        [
            "--node", "n",
            "--kubernetes.backoff-initial=50ms",
            "--kubernetes.backoff-max", "2",
            "--nvml.xid-hold=20m",
            "--collection.timeout", "1500ms",
        ]
    )  # fmt: skip
    assert args.backoff_initial == pytest.approx(0.05)
    assert args.backoff_max == 2.0
    assert args.xid_hold == 1200.0
    assert args.timeout == pytest.approx(1.5)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--nod", "n"], "xgpu-exporter: unknown flag --nod; did you mean --node? (see --help)"),
        (  # read as written: a prefix is not taken for the flag it begins
            [*BASE, "--collection.time=2s"],
            "xgpu-exporter: unknown flag --collection.time; did you mean --collection.timeout? "
            "(see --help)",
        ),
        ([*BASE, "--bogus"], "xgpu-exporter: unknown flag --bogus (see --help)"),
    ],
)
def test_a_mistyped_flag_names_itself_and_the_nearest(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err == line + "\n"


async def test_the_back_off_reaches_the_pod_source() -> None:
    wiring = build(
        parse_args(
            [
                "--node", "gpu-node-1",
                "--no-collector.nvml",
                "--kubernetes.backoff-initial", "0.2",
                "--kubernetes.backoff-max", "7s",
            ]
        )
    )  # fmt: skip
    assert isinstance(wiring.pods, KubePodSource)
    assert (wiring.pods._backoff_initial_s, wiring.pods._backoff_max_s) == (0.2, 7.0)
    await wiring.pods.close()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--kubernetes.backoff-initial", "soon"], "--kubernetes.backoff-initial: expected"),
        (["--kubernetes.backoff-max", "-1"], "--kubernetes.backoff-max: expected"),
        (["--nvml.xid-hold", "nan"], "--nvml.xid-hold: expected"),
        (["--collection.timeout", "inf"], "--collection.timeout: expected"),
        (["--nvml.call-timeout", "30m1h"], "--nvml.call-timeout: expected units from the"),
        (["--collection.freshness", "1" + "0" * 400], "too large"),
    ],
)
def test_a_value_that_is_no_duration_exits_2_with_one_line(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*BASE, *flags])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("xgpu-exporter: argument ")
    assert said in lines[0]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--kubernetes.backoff-initial", "0"], "--kubernetes.backoff-initial must be more than 0"),
        (["--kubernetes.backoff-max", "0s"], "--kubernetes.backoff-max must be more than 0"),
        (["--nvml.xid-hold", "0"], "--nvml.xid-hold must be more than 0"),
        (["--collection.timeout", "0ms"], "--collection.timeout must be more than 0"),
        (
            ["--kubernetes.backoff-initial", "10s", "--kubernetes.backoff-max", "5s"],
            "--kubernetes.backoff-max (5s) is below --kubernetes.backoff-initial (10s)",
        ),
    ],
)
def test_a_duration_that_cannot_work_exits_2_with_one_line(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BASE, *flags]) == 2
    assert capsys.readouterr().err.splitlines() == [f"xgpu-exporter: {said}"]


def test_freshness_may_be_0() -> None:
    wiring = build(parse_args([*BASE, "--collection.freshness", "0"]))
    assert wiring.engine.freshness_s == 0.0


def test_listen_address_takes_the_node_exporter_name_and_the_short_one() -> None:
    assert parse_args(["--node", "n"]).listen == f":{DEFAULT_PORT}"
    assert parse_args(["--node", "n", "--web.listen-address=127.0.0.1:9500"]).listen == (
        "127.0.0.1:9500"
    )
    assert parse_args(["--node", "n", "--listen", ":9600"]).listen == ":9600"


def test_the_default_port_is_neither_dcgm_exporter_s_nor_in_the_allocated_range() -> None:
    """dcgm-exporter serves on 9400; Prometheus's default-port allocations fill 9100-9999.
    Below 32768, where Linux starts handing out ephemeral ports (a hostNetwork pod's
    outgoing connections could take it)."""
    assert DEFAULT_PORT == 19400
    assert not 9090 <= DEFAULT_PORT <= 9999
    assert DEFAULT_PORT < 32768


def test_cce_families_are_on_by_default_and_the_no_flag_turns_them_off() -> None:
    assert build(parse_args(BASE)).engine.families == FAMILY_GROUPS == {"cce"}
    wiring = build(parse_args([*BASE, "--no-collector.cce"]))
    assert wiring.engine.families == frozenset()
    assert build(parse_args([*BASE, "--collector.cce"])).engine.families == {"cce"}


@pytest.mark.realservices
def test_a_simulated_exporter_without_cce_serves_no_cce_name(tmp_path: Path) -> None:
    args = ["--simulate", str(DEMO), "--node", "cce-node-1", "--no-collector.cce"]
    exporter = start_exporter(args, tmp_path / "exporter.log")
    try:
        text = exporter.metrics()
    finally:
        exporter.stop()
    served = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1] != "#"}
    assert served & metricnames.CCE_NAMES == set()
    # the card-level families (Prometheus names) are still there, for every card
    assert {"xgpu_card_memory_allotted_bytes", "xgpu_card_vgpus", "xgpu_node_info"} <= served
