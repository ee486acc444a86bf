"""A profile is one object (advisor.core.profiles): nothing outside the package branches on a
profile's name, and a new profile is one module plus one `register` line, which a toy
profile defined here proves by running `diagnose` and `plan` under it."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from advisor import schemas
from advisor.cli import main
from advisor.core.jobs import KUBE_SCHEDULER_SESSION, SessionRules
from advisor.core.model import Card, Policy, PolicyName, Request, Scheduler
from advisor.core.profiles import PROFILES, profile_for, register, unregister
from advisor.core.profiles.base import (
    BoolArray,
    CardView,
    Dialect,
    FloatArray,
    IntArray,
    ScaleUpActor,
    dialect_allocatable,
    dialect_request,
    enough_cards,
    first_by_name,
    gpus_problem,
    listed_cards,
    walk,
)
from advisor.core.shape import Shape
from tests.advisor.test_schemas import conforms

ADVISOR = Path(__file__).resolve().parents[3] / "advisor"
PROFILES_PACKAGE = ADVISOR / "core" / "profiles"
BUILT_IN = ("cce", "hami", "volcano-vgpu")


def _names_in(node: ast.expr) -> set[str]:
    """The profile names an operand spells: a string, or a tuple/list/set of strings."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & set(BUILT_IN)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_names_in(e) for e in node.elts)) if node.elts else set()
    return set()


def name_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, name) of every comparison (==, !=, in, not in, a match case) of a profile name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found.extend((node.lineno, name) for name in _names_in(operand))
        elif isinstance(node, ast.MatchValue):
            found.extend((node.lineno, name) for name in _names_in(node.value))
    return sorted(found)


def test_the_scan_finds_a_comparison() -> None:
    """The scan below could fail: it sees each way of branching on a name."""
    source = """
if scheduler.profile == "cce": pass
if "hami" != p: pass
if name in ("volcano-vgpu", "x"): pass
match profile:
    case "hami": pass
"""
    assert [name for _, name in name_comparisons(source)] == ["cce", "hami", "volcano-vgpu", "hami"]
    assert name_comparisons('profile = "cce"\nDEFAULT = {"hami": 1}\n') == []  # data, not a branch


def test_no_module_outside_the_profiles_compares_a_profile_name() -> None:
    offenders = [
        f"{path.relative_to(ADVISOR.parent)}:{line}: {name}"
        for path in sorted(ADVISOR.rglob("*.py"))
        if PROFILES_PACKAGE not in path.parents
        for line, name in name_comparisons(path.read_text())
    ]
    assert offenders == []


def test_the_built_in_profiles_are_registered_in_order() -> None:
    assert tuple(PROFILES)[:3] == BUILT_IN
    assert all(profile_for(name).name == name for name in BUILT_IN)
    with pytest.raises(ValueError, match="already registered"):
        register(profile_for("cce"))


class ToyProfile:
    """A scheduler that never uses a card of odd index; otherwise the first node by name and
    its cards in index order. Everything a profile is, in one class."""

    name = "toy"
    title = "Toy"
    reasons: tuple[str, ...] = ("too-few-cards", "vgpu-limit", "card-memory", "odd-card")
    random_ties = False
    few_cards_reason = 0
    refused_reason: int | None = None
    refused_reasons: tuple[int, ...] = ()
    memory_reason = 2
    health_reason: int | None = None
    checks_health = False
    card_word = ""
    requires_memory = True
    one_mode_per_card = False
    named_in_reports = True
    scale_up_actor: ScaleUpActor = "cluster-autoscaler"
    node_pool_label: str | None = None
    default_policy = Policy("binpack", "binpack")
    card_policies: tuple[PolicyName, ...] = ("binpack",)
    default_max_vgpus = 4
    settings: tuple[str, ...] = ()
    session: SessionRules = KUBE_SCHEDULER_SESSION
    dialect: Dialect | None = None
    allocation_annotation: str | None = None
    registration_annotation: str | None = None

    def configured(self, scheduler: Scheduler) -> ToyProfile:
        return self

    def request_problem(self, request: Request) -> str | None:
        return gpus_problem(request) or ("toy asks memory" if request.memory_mib <= 0 else None)

    def shape_problem(self, shape: Shape) -> str | None:
        return None

    def queue_request(self, request: Request) -> dict[str, int]:
        return dialect_request(self.dialect, request)

    def device_allocatable(self, cards: tuple[Card, ...], slots: int) -> dict[str, int]:
        return dialect_allocatable(self.dialect, cards, slots)

    def mode_conflicts(self, card_modes: IntArray, mode: int) -> BoolArray:
        return np.zeros(card_modes.shape, dtype=np.bool_)

    def card_need(self, capacity: IntArray, shape: Shape) -> IntArray:
        return np.full(capacity.shape, shape.card_memory_mib, dtype=np.int64)

    def card_core(self, shape: Shape) -> int:
        return shape.card_core

    def card_rejections(
        self, st: CardView, shape: Shape, at: IntArray | slice
    ) -> tuple[BoolArray | None, ...]:
        return (
            st.vgpus[at] >= st.slots[at],
            st.free_memory[at] < shape.card_memory_mib,
            st.card_index[at] % 2 == 1,
        )

    def card_reason_text(self, code: int, cards: list[int], shape: Shape, limit: int) -> str:
        return listed_cards(self.reasons, code, cards)

    def fits(self, st: CardView, shape: Shape, eligible: BoolArray) -> BoolArray:
        return enough_cards(st, shape, eligible)

    def refusals(self, st: CardView, shape: Shape) -> IntArray:
        return np.zeros(st.card_count.shape, dtype=np.int64)

    def node_scores(
        self,
        st: CardView,
        nodes: IntArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> FloatArray:
        return np.zeros(nodes.size)

    def pick_best(
        self,
        st: CardView,
        nodes: IntArray,
        scores: FloatArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> list[int]:
        st.tied = 0
        return walk(list(st.node_positions(first_by_name(st, nodes))), eligible, shape.gpus)


@pytest.fixture
def toy() -> Iterator[None]:
    register(ToyProfile())  # the one line a new profile takes
    yield
    unregister("toy")


def _card(index: int) -> dict[str, int]:
    return {"index": index, "memory_mib": 16384}


# Two nodes of two 16 GiB cards. Under toy only cards 0 count: a has 4 GiB free there, b 12
# GiB; b/0's 4 GiB pod fits a/0 exactly, which frees b/0 for the 14 GiB Pending pod. Under
# cce the 14 GiB pod would simply take an empty card 1.
TOY_SCENARIO: dict[str, Any] = {
    "scheduler": {"profile": "toy"},
    "nodes": [
        {"name": "a", "cards": [_card(0), _card(1)]},
        {"name": "b", "cards": [_card(0), _card(1)]},
    ],
    "pods": [
        {"name": "ml/big", "request": {"gpus": 1, "memory_mib": 12288}, "node": "a", "cards": [0]},
        {"name": "ml/small", "request": {"gpus": 1, "memory_mib": 4096}, "node": "b", "cards": [0]},
        {"name": "ml/wait", "request": {"gpus": 1, "memory_mib": 14336}},
    ],
}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_toy_profile_runs_diagnose_and_plan(
    toy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(TOY_SCENARIO))
    diagnosis = _run(capsys, "diagnose", "--scenario", str(path))
    assert conforms(diagnosis, schemas.DIAGNOSIS_SCHEMA) == []
    assert diagnosis["scheduler"] == {"profile": "toy"}
    [wait] = [p for p in diagnosis["pods"] if p["pod"] == "ml/wait"]
    assert wait["cause"] == "fragmentation", wait
    # each node refuses for the toy's own reasons: odd cards, then too little memory on card 0
    assert wait["nodes"] == {
        "a": ["card-memory: card 0", "odd-card: card 1"],
        "b": ["card-memory: card 0", "odd-card: card 1"],
    }
    plan = _run(capsys, "plan", "--scenario", str(path))
    assert conforms(plan, schemas.PLAN_SCHEMA) == []
    [only] = plan["plans"]
    assert (only["rescues"], only["evict"]) == (["ml/wait"], ["ml/small"])
    assert only["placements"] == {
        "ml/wait": {"node": "b", "cards": [0]},
        "ml/small": {"node": "a", "cards": [0]},
    }


def test_the_same_cluster_under_cce_needs_no_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The toy's answers above are its own: cce places the pod on an empty card 1."""
    path = tmp_path / "cce.yaml"
    path.write_text(yaml.safe_dump({**TOY_SCENARIO, "scheduler": {"profile": "cce"}}))
    diagnosis = _run(capsys, "diagnose", "--scenario", str(path))
    [wait] = [p for p in diagnosis["pods"] if p["pod"] == "ml/wait"]
    assert wait["cause"] == "schedulable"
