"""What to do about each cause: the advice both pages show, grouped with the pods it concerns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from advisor.core.remedy import ACTIONS
from advisor.render.common.advice import advice_key
from advisor.schemas import DiagnosisJson


@dataclass(frozen=True, slots=True)
class Advice:
    key: str  # an advice key (`advisor.core.remedy`): a cause, or one of its sub-cases
    title: str
    text: str


# The core's table (`advisor.core.remedy.ACTIONS`): the words are decided there, with the key.
ADVICE: Mapping[str, Advice] = {
    key: Advice(key, title, text) for key, (title, text) in ACTIONS.items()
}


def grouped_advice(diagnosis: DiagnosisJson) -> list[tuple[Advice, list[str]]]:
    """Each kind of advice that applies, in ADVICE order, with the pods it concerns."""
    groups: dict[str, list[str]] = {}
    for pod in diagnosis["pods"]:
        groups.setdefault(advice_key(pod), []).append(pod["pod"])
    return [(advice, groups[key]) for key, advice in ADVICE.items() if key in groups]
