"""The names and defaults the command line shows before it runs anything: one light module,
so that building `xgpu-advisor`'s parser (`--help`, a bad flag, any command before it reads
its input) imports none of the model, the sources or their libraries (README, "Start-up").

The modules that use these values import them from here; nothing is written twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

MIB = 2**20

# Scheduler profiles built in (core.profiles registers them under these names, in this
# order: a test holds the two together) and the policies the flags offer.
BUILT_IN_PROFILES = ("cce", "hami", "volcano-vgpu")
NODE_POLICIES: tuple[Literal["binpack", "spread"], ...] = ("binpack", "spread")
# The card policies each built-in profile knows (core.profiles', held together by the same
# test), so that `replay` refuses one its profile does not know before the model loads.
BUILT_IN_CARD_POLICIES: dict[str, tuple[str, ...]] = {
    "cce": ("binpack", "spread"),
    "hami": ("binpack", "spread"),
    "volcano-vgpu": ("binpack", "spread", "legacy"),
}
# replay: GPUs only, or the nodes' and pods' cpu and memory too
ResourceMode = Literal["gpu", "all"]
RESOURCE_MODES: tuple[ResourceMode, ...] = ("gpu", "all")

# diagnose: nodes whose reasons are listed per pod
DEFAULT_NODE_DETAIL = 20

# plan search (core.plan): the caps, and the work that bounds a run
DEFAULT_MAX_PLAN_EVICTIONS = 4
DEFAULT_MAX_EVICTIONS = 3.0  # per card the rescued pods get (EvictionBudget's default)
# work for the whole search, in simulated placements (`Board.work`): the openb end states
# (6,212 cards) need about as much at most; about 25 s of CPU on 5,000 nodes of 8 cards
DEFAULT_WORK = 200_000
# a safety stop only, read between the search's runs (never inside one): work ends a run
DEFAULT_TIME_BUDGET_S = 300.0
# what --max-evictions counts per: the whole advice, a rescued card, a rescued GPU of memory
Per = Literal["advice", "card", "gpu"]

# live sources
DEFAULT_STALE_AFTER_S = 300.0
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_ANSWER_BYTES = 64 * MIB
DEFAULT_MAX_EXPORTER_BYTES = 16 * MIB
DEFAULT_MAX_SERIES = 1_000_000

MAX_SCENARIO_BYTES = 64 * MIB


def size_text(n: int) -> str:
    if n % MIB == 0:
        return f"{n // MIB} MiB"
    if n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


def eviction_budget_parts(text: str) -> tuple[float, Per]:
    """`--max-evictions`: "N" (a count), "N/card" or "N/gpu" as (amount, per); ValueError
    saying what is wrong otherwise. `core.plan.limits.EvictionBudget` parses with it; here so
    that `plan` refuses a bad value before it loads the model (README "Start-up")."""
    amount_text, _, per = text.strip().partition("/")
    per = per.strip().lower() or "advice"
    if per not in ("advice", "card", "gpu") or (per == "advice" and "/" in text):
        raise ValueError(f"expected N, N/card or N/gpu, got {text!r}")
    try:
        amount = float(amount_text)
    except ValueError:
        raise ValueError(f"expected N, N/card or N/gpu, got {text!r}") from None
    if not math.isfinite(amount) or amount < 0:
        raise ValueError(f"expected a number >= 0 before the unit, got {text!r}")
    if per == "advice" and amount != int(amount):
        raise ValueError(f"a count of evictions is a whole number, got {text!r}")
    return amount, "card" if per == "card" else "gpu" if per == "gpu" else "advice"


def never_evict_parts(text: str) -> tuple[str | None, str | None, str | None]:
    """`--never-evict`: "key=value" (a label) or a Kind ("StatefulSet") as (kind, key, value);
    ValueError otherwise. `core.plan.limits.NeverEvict` parses with it, as above."""
    text = text.strip()
    if "=" in text:
        key, _, value = text.partition("=")
        if not key.strip():
            raise ValueError(f"expected key=value or an owner kind, got {text!r}")
        return None, key.strip(), value.strip()
    if not text or not text.replace(".", "").isalnum():
        raise ValueError(f"expected key=value or an owner kind, got {text!r}")
    return text, None, None


@dataclass(frozen=True, slots=True)
class ScenarioLimits:
    """How large a scenario the tools read (the CLI's --scenario.max-* flags). The defaults
    are far above any cluster (the openb trace: 1,213 nodes, 6,212 cards, 8,152 pods) and far
    below what would exhaust a CronJob's 1 GiB."""

    max_bytes: int = MAX_SCENARIO_BYTES
    max_nodes: int = 100_000
    max_cards: int = 1_000_000
    max_pods: int = 1_000_000


DEFAULT_LIMITS = ScenarioLimits()

Basis = Literal["p95", "peak"]


@dataclass(frozen=True, slots=True)
class RightsizingSettings:
    headroom: float = 0.2
    memory_basis: Basis = "peak"
    core_basis: Basis = "p95"
    overcommit_max_p95_ratio: float = 0.6
    overcommit_max_peak_ratio: float = 0.9
    overcommit_min_samples: int = 60
    overcommit_min_coverage: float = 0.9  # share of the whole window the workload's samples span
    min_history_s: float = 86400.0  # history a workload must cover to be advised at all
    min_samples: int = 288  # sample times it must have (24 h at a 5 m step)
    peak_margin: float = 0.1  # never recommend below the observed peak × (1 + this)
