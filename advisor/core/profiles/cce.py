"""CCE xGPU's card and node rules (docs/design.md §1–§2).

Card binpack takes the N eligible cards with the least free memory, spread the most; the
node wins on the mean allotted fraction of its healthy cards after placement (binpack the
highest, spread the lowest); ties go to the node first by name, then the lowest card index.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from advisor.core.jobs import CCE_SESSION, VOLCANO_SETTINGS, SessionRules
from advisor.core.model import (
    CORE_STEP,
    DEFAULT_MAX_VGPUS,
    MAX_MEMORY_UNITS,
    MIB_PER_UNIT,
    Card,
    Mode,
    Policy,
    PolicyName,
    Request,
    Scheduler,
)
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
    gpus_problem,
)
from advisor.core.shape import Shape

CCE_GPU_NUM_LABEL = "volcano.sh/gpu-num"  # the pod label holding N
# CCE writes each node's pool on it; a node in no pool (DefaultPool) carries none.
CCE_NODE_POOL_LABEL = "cce.cloud.com/cce-nodepool"
DIALECT = Dialect(
    name="cce",
    count=None,
    memory="volcano.sh/gpu-mem.128Mi",
    core="volcano.sh/gpu-core.percentage",
    memory_percentage=None,
    memory_unit_mib=MIB_PER_UNIT,
    per_card=False,
    allocation="volcano.sh/gpu-index",
)
NEAR_TIE = 1e-13  # well above the float noise of a card sum, well below real score gaps


class CceProfile:
    name = "cce"
    title = "CCE xGPU"
    reasons: tuple[str, ...] = (
        "too-few-cards",
        "unhealthy",
        "mode-conflict",
        "vgpu-limit",
        "card-memory",
        "card-core",
    )
    few_cards_reason = 0  # index of the reason for a node with fewer cards than asked
    refused_reason: int | None = None  # index of the reason for enough cards refused together
    refused_reasons: tuple[int, ...] = ()
    memory_reason = 4  # index of the card check for free memory
    health_reason: int | None = 1  # index of the card check for health, if any
    checks_health = True
    card_word = "healthy "
    random_ties = False
    requires_memory = True
    one_mode_per_card = True
    named_in_reports = False
    scale_up_actor: ScaleUpActor = "person"
    node_pool_label: str | None = CCE_NODE_POOL_LABEL
    default_policy = Policy("binpack", "binpack")
    card_policies: tuple[PolicyName, ...] = ("binpack", "spread")
    default_max_vgpus = DEFAULT_MAX_VGPUS
    settings: tuple[str, ...] = VOLCANO_SETTINGS
    session: SessionRules = CCE_SESSION
    dialect: Dialect | None = DIALECT
    allocation_annotation: str | None = DIALECT.allocation
    registration_annotation: str | None = None

    def configured(self, scheduler: Scheduler) -> CceProfile:
        return self

    def request_problem(self, request: Request) -> str | None:
        return gpus_problem(request) or _request_problem(request)

    def shape_problem(self, shape: Shape) -> str | None:
        return None

    def mode_conflicts(self, card_modes: IntArray, mode: int) -> BoolArray:
        """The one isolation mode per card: a card in use by the other mode refuses."""
        return np.asarray((card_modes != int(Mode.UNUSED)) & (card_modes != mode), dtype=np.bool_)

    def queue_request(self, request: Request) -> dict[str, int]:
        return dialect_request(DIALECT, request)

    def device_allocatable(self, cards: tuple[Card, ...], slots: int) -> dict[str, int]:
        return dialect_allocatable(DIALECT, cards, slots)

    def card_need(self, capacity: IntArray, shape: Shape) -> IntArray:
        return np.full(capacity.shape, shape.card_memory_mib, dtype=np.int64)

    def card_core(self, shape: Shape) -> int:
        return shape.card_core

    def card_rejections(
        self, st: CardView, shape: Shape, at: IntArray | slice
    ) -> tuple[BoolArray | None, ...]:
        return (
            ~st.healthy[at],
            self.mode_conflicts(st.mode[at], shape.mode),
            st.vgpus[at] >= st.slots[at],
            st.free_memory[at] < shape.card_memory_mib,
            st.free_core[at] < shape.card_core if shape.mode == int(Mode.MEMORY_CORE) else None,
        )

    def card_reason_text(self, code: int, cards: list[int], shape: Shape, limit: int) -> str:
        listed = ", ".join(map(str, cards))
        noun = "card" if len(cards) == 1 else "cards"
        verb = "has" if len(cards) == 1 else "have"
        wanted = "memory+core" if shape.mode == int(Mode.MEMORY_CORE) else "memory"
        other = "memory" if shape.mode == int(Mode.MEMORY_CORE) else "memory+core"
        text = {
            1: f"{noun} {listed} {'is' if len(cards) == 1 else 'are'} unhealthy",
            2: f"{noun} {listed} host {other} isolation vGPUs, pod needs {wanted} isolation",
            3: f"{noun} {listed} {verb} {limit} vGPUs (the limit)",
            4: f"{noun} {listed} {verb} less than {shape.card_memory_mib} MiB free",
            5: f"{noun} {listed} {verb} less than {shape.card_core}% core free",
        }[code]
        return f"{self.reasons[code]}: {text}"

    def fits(self, st: CardView, shape: Shape, eligible: BoolArray) -> BoolArray:
        return enough_cards(st, shape, eligible)

    def refusals(self, st: CardView, shape: Shape) -> IntArray:
        return np.zeros(st.card_count.shape, dtype=np.int64)  # `fits` never refuses so

    def choose(
        self, st: CardView, node: int, shape: Shape, card_policy: PolicyName, eligible: BoolArray
    ) -> list[int]:
        """Card positions on `node`: least free first (binpack) or most free."""
        candidates = [k for k in st.node_positions(node) if eligible[k]]
        sign = 1 if card_policy == "binpack" else -1
        candidates.sort(key=lambda k: (sign * int(st.free_memory[k]), int(st.card_index[k])))
        return candidates[: shape.gpus]

    def node_scores(
        self,
        st: CardView,
        nodes: IntArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> FloatArray:
        # Uniform nodes score from integer sums in one vector op; the rest (and ties, in
        # `pick_best`) take the card-by-card float mean a plain implementation computes.
        uniform = st.uniform_capacity[nodes] > 0
        num = (st.allotted_healthy[nodes] + shape.gpus * shape.card_memory_mib).astype(np.float64)
        den = (st.uniform_capacity[nodes] * st.healthy_count[nodes]).astype(np.float64)
        score = np.divide(num, den, out=np.zeros(nodes.size), where=uniform)
        if not uniform.all():
            score[~uniform] = _card_mean_scores(st, nodes[~uniform], shape, policy[1], eligible)
        return score

    def pick_best(
        self,
        st: CardView,
        nodes: IntArray,
        scores: FloatArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> list[int]:
        node_policy, card_policy = policy
        st.tied = 0
        best = scores.max() if node_policy == "binpack" else scores.min()
        # Integer-sum and card-by-card scores of equal nodes differ in the last bits: treat
        # everything within that noise as tied and rank it the card-by-card way below.
        tied = nodes[np.abs(scores - best) <= NEAR_TIE * max(abs(float(best)), 1.0)]
        if tied.size > 1:
            # Equal in exact arithmetic; a real scheduler sums float fractions card by card,
            # and those sums differ in the last bit, so rank the tied nodes the same way.
            refined = _card_mean_scores(st, tied, shape, card_policy, eligible)
            key = -refined if node_policy == "binpack" else refined
            tied = tied[np.lexsort((st.name_rank[tied], key))[:1]]
        return self.choose(st, int(tied[0]), shape, card_policy, eligible)


def _card_mean_scores(
    st: CardView, nodes: IntArray, shape: Shape, card_policy: PolicyName, eligible: BoolArray
) -> npt.NDArray[np.float64]:
    """Mean allotted fraction of each node's healthy cards after placing `shape` there,
    summed card by card in list order (what `sum(fractions) / len(fractions)` gives)."""
    width = int(st.card_count[nodes].max())
    column = np.arange(width)
    valid = column[None, :] < st.card_count[nodes][:, None]
    pos = np.where(valid, st.first_card[nodes][:, None] + column[None, :], 0)
    free = st.free_memory[pos]
    usable = valid & eligible[pos]
    big = np.iinfo(np.int64).max
    order_key = np.where(usable, free if card_policy == "binpack" else -free, big)
    order = np.lexsort((st.card_index[pos], order_key), axis=-1)[:, : shape.gpus]
    chosen = np.zeros(pos.shape, dtype=np.bool_)
    np.put_along_axis(chosen, order, True, axis=-1)
    allotted = st.capacity[pos] - free + np.where(chosen, shape.card_memory_mib, 0)
    counted = valid & st.healthy[pos]
    fraction = np.where(counted, allotted / st.capacity[pos], 0.0)
    total = np.zeros(nodes.size)
    for j in range(width):  # left to right, as Python's sum() adds
        total = total + fraction[:, j]
    healthy = st.healthy_count[nodes]
    return np.divide(total, healthy, out=np.zeros(nodes.size), where=healthy > 0)


def _request_problem(request: Request) -> str | None:
    n, mem, core = request.gpus, request.memory_mib, request.core_percent
    if request.memory_percent:
        return "CCE has no memory share requests (memory_percent)"
    if mem < MIB_PER_UNIT or mem > MAX_MEMORY_UNITS * MIB_PER_UNIT:
        return f"memory {mem} MiB is outside 1..{MAX_MEMORY_UNITS} units of {MIB_PER_UNIT} MiB"
    if mem % n or (mem // n) % MIB_PER_UNIT:
        return (
            f"memory {mem} MiB over {n} cards is not a whole multiple of "
            f"{MIB_PER_UNIT} MiB per card"
        )
    if core < 0:
        return f"core {core}% is negative"
    if core % n or (core // n) % CORE_STEP:
        return f"core {core}% over {n} cards is not a whole multiple of {CORE_STEP}% per card"
    if core // n > 100:
        return f"core {core}% over {n} cards is {core // n}% per card, above 100%"
    return None
