"""What a scheduler profile is (docs/design.md §9.2), and the card view it judges.

A profile is one object: its card filter and card choice, its reasons in the scheduler's own
words, its defaults, the marks that name it on a live cluster, what it accepts in a request
and a scenario. Everything outside `advisor.core.profiles` asks the profile, never its name.

The profiles sit below `core.state`: the state holds the cards and asks its profile which of
them may take a pod and which it picks; a profile sees the cards through `CardView`, the
arrays the state keeps, and never imports the state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from advisor.core.jobs import SessionRules
from advisor.core.mig import mig_resource
from advisor.core.model import Card, Policy, PolicyName, Request, Scheduler
from advisor.core.shape import Shape

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.floating]
# Who adds the nodes scale-up advises: the cluster-autoscaler, or a person resizing a pool.
ScaleUpActor = Literal["person", "cluster-autoscaler"]


@dataclass(frozen=True, slots=True)
class Dialect:
    """How a container asks a profile's scheduler for shared GPUs: its resource names (read
    by `advisor.podspec`) and the annotation that records the cards granted."""

    name: str
    count: str | None  # resource holding N; None: N is the pod label (CCE)
    memory: str
    core: str
    memory_percentage: str | None  # a share of each card, in percent (HAMi, Volcano vGPU)
    memory_unit_mib: int
    per_card: bool  # memory and core are per card (Volcano vGPU, HAMi) or totals (CCE)
    allocation: str  # annotation that records the granted cards

    @property
    def keys(self) -> tuple[str, ...]:
        named = (self.count, self.memory, self.core, self.memory_percentage)
        return tuple(key for key in named if key is not None)


class CardView(Protocol):
    """The cards as a profile reads them (`core.state.CardState` is the one implementation):
    flat arrays, one entry per card (or per node where named so)."""

    slots: IntArray  # vGPUs a card may host
    vgpus: IntArray  # vGPUs on it now
    capacity: IntArray
    free_memory: IntArray
    free_core: IntArray
    mode: IntArray  # `Mode` of the vGPUs on it
    healthy: BoolArray
    numa: IntArray
    card_index: IntArray
    name_rank: IntArray  # per node: its place when the nodes are sorted by name
    first_card: IntArray  # per node: position of its first card
    card_count: IntArray  # per node
    healthy_count: IntArray  # per node
    uniform_capacity: IntArray  # per node: its healthy cards' one size, else 0
    allotted_healthy: IntArray  # per node: MiB allotted on its healthy cards
    node_used: IntArray  # per node: (vGPUs, cores, memory) in use
    node_core_asked: IntArray  # per node: Σ each pod's per-card core, as written
    node_of: IntArray  # per card: its node
    node_total: IntArray  # per node: (slots, cores, memory) of all its cards
    tied: int  # nodes tied in the last pick where the real scheduler picks at random

    def node_positions(self, node: int) -> range: ...

    def eligible_per_node(self, eligible: BoolArray) -> IntArray: ...


class Profile(Protocol):
    name: str  # as the scenario's `scheduler.profile` and `--scheduler` spell it
    title: str  # the scheduler, in a sentence: "CCE xGPU"

    # -- the card filter's words --------------------------------------------------------
    # Per-node GPU reasons: the node-level one first (too few cards qualify), then one per
    # card check in the order `card_rejections` returns them, then any node-level extras.
    reasons: tuple[str, ...]
    # The real scheduler breaks equal node scores at random: the model takes the first node
    # by name and says the real pick may differ.
    random_ties: bool
    few_cards_reason: int  # index in `reasons`: the node has fewer cards than asked
    refused_reason: int | None  # index in `reasons`: enough eligible cards, refused together
    refused_reasons: tuple[int, ...]  # every such index (`refusals` tells them apart)
    # Indices in `reasons` of the card checks for free memory and for health (None: none):
    # a headline names any other check that decided, since it is not about memory.
    memory_reason: int
    health_reason: int | None
    checks_health: bool  # whether an unhealthy card is refused
    card_word: str  # what the counted cards are called in messages ("healthy ", or "")

    # -- what a request may ask ---------------------------------------------------------
    # Every request gives an absolute memory (CCE); else a request may ask a share of each
    # card (`memory_percent`) or, giving neither, whole cards.
    requires_memory: bool
    # A card hosts vGPUs of one isolation mode only (CCE's memory / memory+core).
    one_mode_per_card: bool
    # Reports keep their plain wording for this profile instead of naming it.
    named_in_reports: bool

    # -- who adds nodes (scale-up, docs/design.md §8) -----------------------------------
    # The cluster-autoscaler, or a person where the cloud's autoscaler does not scale the
    # GPU nodes (CCE's Autoscaler add-on and xGPU); the node label naming a node's pool.
    scale_up_actor: ScaleUpActor
    node_pool_label: str | None

    # -- defaults and settings ----------------------------------------------------------
    default_policy: Policy
    card_policies: tuple[PolicyName, ...]
    default_max_vgpus: int
    settings: tuple[str, ...]  # the `Scheduler` fields (scenario keys) this profile reads
    # Whose session decides jobs (Volcano's or kube-scheduler's), with its defaults (§10.1).
    session: SessionRules

    # -- how its pods ask, and how a live cluster names it (`--scheduler auto`) ---------
    dialect: Dialect | None  # its resource names; None: it reads another profile's
    allocation_annotation: str | None  # written on every pod it places
    registration_annotation: str | None  # the node's card registration it reads

    def configured(self, scheduler: Scheduler) -> Profile:
        """This profile with the settings of `scheduler` (one of this profile's)."""
        ...

    def request_problem(self, request: Request) -> str | None:
        """Why a request breaks a rule of the profile (docs/design.md §1, §9.2), or None."""
        ...

    def shape_problem(self, shape: Shape) -> str | None:
        """Why the profile refuses a pod for what else it asks (HAMi: its annotations)."""
        ...

    def mode_conflicts(self, card_modes: IntArray, mode: int) -> BoolArray:
        """Per card of these modes, whether it refuses a vGPU of isolation `mode` for the
        mode it already hosts: the one definition of "one isolation mode per card"."""
        ...

    def card_need(self, capacity: IntArray, shape: Shape) -> IntArray:
        """Memory (MiB) each card of these capacities must give `shape`."""
        ...

    def queue_request(self, request: Request) -> dict[str, int]:
        """The request's GPU resources as the pod spec writes them (`dialect_request`):
        what Volcano's queues and HAMi's quotas count of a pod (docs/design.md §10.2)."""
        ...

    def device_allocatable(self, cards: tuple[Card, ...], slots: int) -> dict[str, int]:
        """The GPU resources a node with these cards advertises in its allocatable
        (`dialect_allocatable`; `slots`: vGPUs a card without its own limit hosts)."""
        ...

    def card_core(self, shape: Shape) -> int:
        """Core (%) each card must give `shape`."""
        ...

    def card_rejections(
        self, st: CardView, shape: Shape, at: IntArray | slice
    ) -> tuple[BoolArray | None, ...]:
        """Per card at `at`, whether each card check (`reasons[1:]`) rejects it (None: the
        check does not apply): the one definition of the card filter, which placement
        decides by and the diagnosis explains by."""
        ...

    def card_reason_text(self, code: int, cards: list[int], shape: Shape, limit: int) -> str:
        """A node's line for the cards the check `reasons[code]` refuses."""
        ...

    def fits(self, st: CardView, shape: Shape, eligible: BoolArray) -> BoolArray:
        """Per node: the GPU filter passes (enough eligible cards, and any profile rule on
        how they combine)."""
        ...

    def refusals(self, st: CardView, shape: Shape) -> IntArray:
        """Per node, the index in `reasons` (one of `refused_reasons`) naming why `fits`
        refuses a node with enough eligible cards."""
        ...

    def node_scores(
        self,
        st: CardView,
        nodes: IntArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> FloatArray:
        """Each node's score among `nodes` (all fit) for `shape`: read from that node's own
        cards and sums alone, so a score stays right while its node is unchanged
        (`core.placer` keeps them between placements)."""
        ...

    def pick_best(
        self,
        st: CardView,
        nodes: IntArray,
        scores: FloatArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> list[int]:
        """Card positions on the winning node among `nodes` (all fit), scored `scores`
        (`node_scores`); sets `st.tied`."""
        ...


def pick(
    profile: Profile,
    st: CardView,
    nodes: IntArray,
    shape: Shape,
    eligible: BoolArray,
    policy: tuple[PolicyName, PolicyName],
) -> list[int]:
    """Card positions on the node the profile picks among `nodes` (all fit); sets `st.tied`."""
    scores = profile.node_scores(st, nodes, shape, eligible, policy)
    return profile.pick_best(st, nodes, scores, shape, eligible, policy)


def enough_cards(st: CardView, shape: Shape, eligible: BoolArray) -> BoolArray:
    return np.asarray(st.eligible_per_node(eligible) >= shape.gpus, dtype=np.bool_)


def first_by_name(st: CardView, nodes: IntArray) -> int:
    return int(nodes[np.argmin(st.name_rank[nodes])])


def walk(order: list[int], eligible: BoolArray, gpus: int) -> list[int]:
    """The first `gpus` eligible cards in walk order (both HAMi's and Volcano's Fit loops
    take cards as they meet them and stop at N)."""
    taken = [k for k in order if eligible[k]][:gpus]
    return taken if len(taken) == gpus else []


def mode_conflict(profile: Profile, card_mode: int, mode: int) -> bool:
    """`Profile.mode_conflicts` for one card."""
    return bool(profile.mode_conflicts(np.array([card_mode], dtype=np.int64), mode)[0])


def listed_cards(reasons: tuple[str, ...], code: int, cards: list[int]) -> str:
    """A card check's line by its name alone: "CardInsufficientMemory: cards 0, 1"."""
    noun = "card" if len(cards) == 1 else "cards"
    return f"{reasons[code]}: {noun} {', '.join(map(str, cards))}"


def split_problem(request: Request) -> str | None:
    """The rules HAMi and Volcano share: per-card values, so totals split evenly over N
    cards, and a share of each card within 1..100."""
    n, mem, core, pct = (
        request.gpus,
        request.memory_mib,
        request.core_percent,
        request.memory_percent,
    )
    if mem < 0 or mem % n:
        return f"memory {mem} MiB does not split evenly over {n} cards"
    if not 0 <= pct <= 100:
        return f"memory share {pct}% per card is outside 1..100"
    if core < 0 or core % n:
        return f"core {core}% does not split evenly over {n} cards"
    return None


def gpus_problem(request: Request) -> str | None:
    """Every profile's first rule: a pod asks at least one card."""
    return f"gpus must be at least 1, got {request.gpus}" if request.gpus < 1 else None


def dialect_request(dialect: Dialect | None, request: Request) -> dict[str, int]:
    """A request in its dialect's resource names, the values as a container writes them:
    per card where the dialect is (Volcano vGPU, HAMi), else totals (CCE), memory in the
    dialect's unit. Volcano sums container requests as written (api.NewResource), so a
    per-card value counts once however many cards the pod asks. A MIG pod asks its
    instances, the device plugin's `nvidia.com/mig-<profile>` (docs/design.md §13), whatever
    the dialect."""
    if request.mig_profile:
        return {mig_resource(request.mig_profile): request.gpus}
    if dialect is None:
        return {}
    n = max(request.gpus, 1)
    per = n if dialect.per_card else 1
    named = (
        (dialect.count, request.gpus),
        (dialect.memory, request.memory_mib // per // dialect.memory_unit_mib),
        (dialect.memory_percentage, request.memory_percent),
        (dialect.core, request.core_percent // per),
    )
    return {name: value for name, value in named if name is not None and value > 0}


def dialect_allocatable(
    dialect: Dialect | None, cards: tuple[Card, ...], slots: int
) -> dict[str, int]:
    """What a node's device plugin advertises for its healthy cards: the vGPU slots (count),
    the memory in the dialect's unit, 100 cores a card. The Volcano vGPU device plugin
    (Project-HAMi/volcano-vgpu-device-plugin, pkg/plugin/vgpu/plugin.go ListAndWatch) lists
    one device per MiB (GPUMemoryFactor 1) and per slot; CCE's plugin is closed source and
    taken to advertise the same way in its 128 MiB unit."""
    if dialect is None:
        return {}
    healthy = [c for c in cards if c.healthy]
    named = (
        (dialect.count, sum(c.max_vgpus or slots for c in healthy)),
        (dialect.memory, sum(c.memory_mib // dialect.memory_unit_mib for c in healthy)),
        (dialect.core, 100 * len(healthy)),
    )
    return {name: value for name, value in named if name is not None and value > 0}
