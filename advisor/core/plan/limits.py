"""The caps a team sets on plans (docs/design.md §8): counts of evictions, not ratios.

- Per plan: at most `max_plan_evictions` pods (`--max-plan-evictions`, default 4): a plan a
  person can read, check and undo.
- For the whole advice: `EvictionBudget` (`--max-evictions`): a count ("20"), or a rate per
  card the rescued pods get ("3/card", the default) or per rescued GPU of memory ("3/gpu").
  Per card, because a card is what a Pending pod waits for whatever its size: a 128 MiB pod
  that one eviction rescues costs 1 per card, and so does a 2 x 4 GiB replica that two
  evictions rescue; per GPU of memory the first would count as 128 evictions per GPU.
- Never evicted, beside the protections every plan keeps (`model.disruption_blocker`): the
  pods a `NeverEvict` selector matches (`--never-evict`: an owner kind, or `key=value` on
  the pod's labels).

The ratio of evictions (or their cost) to rescued GPUs only ranks plans.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from advisor.core.model import Pod
from advisor.core.plan.cost import owner_kind
from advisor.defaults import DEFAULT_MAX_EVICTIONS, Per, eviction_budget_parts, never_evict_parts


@dataclass(frozen=True, slots=True)
class EvictionBudget:
    """At most `amount` evictions in all (`per` "advice"), or `amount` per card the rescued
    pods get ("card"), or per rescued GPU of memory of the commonest card ("gpu")."""

    amount: float = DEFAULT_MAX_EVICTIONS
    per: Per = "card"

    def allows(self, evictions: int, cards: int, gpus: float) -> bool:
        return evictions <= self.limit(cards, gpus) + 1e-9

    def limit(self, cards: int, gpus: float) -> float:
        if self.per == "card":
            return self.amount * cards
        if self.per == "gpu":
            return self.amount * gpus
        return self.amount

    @property
    def text(self) -> str:
        """As the flag takes it: "20", "3/card", "2.5/gpu"."""
        amount = f"{self.amount:g}"
        return amount if self.per == "advice" else f"{amount}/{self.per}"

    @staticmethod
    def parse(text: str) -> EvictionBudget:
        """ "N" (a count), "N/card" or "N/gpu"; ValueError saying what is wrong otherwise."""
        return EvictionBudget(*eviction_budget_parts(text))


@dataclass(frozen=True, slots=True)
class NeverEvict:
    """A selector of pods no plan evicts: `kind` (an owner kind, "StatefulSet") or a label
    `key` with its `value`."""

    kind: str | None = None
    key: str | None = None
    value: str | None = None

    @staticmethod
    def parse(text: str) -> NeverEvict:
        """ "key=value" (a label) or a Kind ("StatefulSet"); ValueError otherwise."""
        return NeverEvict(*never_evict_parts(text))

    @property
    def text(self) -> str:
        return self.kind if self.kind is not None else f"{self.key}={self.value}"

    def matches(self, pod: Pod) -> bool:
        if self.kind is not None:
            return owner_kind(pod.owner) == self.kind
        return self.key is not None and pod.labels.get(self.key) == self.value


def never_evict_reason(pod: Pod, selectors: Iterable[NeverEvict]) -> str | None:
    """The first selector that keeps `pod` where it is, as "--never-evict X"; None if none."""
    for selector in selectors:
        if selector.matches(pod):
            return f"--never-evict {selector.text}"
    return None
