"""Readers of the parts every output's JSON shares: a placement, and the scheduler profile
that judged the output (the diagnosis', the plan's and the report's pages all read them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.profiles import named_in_reports
from advisor.render.common.values import as_int, as_list, as_map, as_str
from advisor.schemas import PlacementJson, SchedulerJson


def read_placement(value: Any) -> PlacementJson | None:
    """None when there is none (null, absent, or not an object with anything in it)."""
    raw = as_map(value)
    if not raw:
        return None
    return {
        "node": as_str(raw.get("node"), "?"),
        "cards": [as_int(card) for card in as_list(raw.get("cards"))],
    }


def read_scheduler(value: Any) -> SchedulerJson | None:
    """The profile that judged the output, with the settings it names; None when it names no
    profile (the pages then read as they always did, for cce)."""
    raw = as_map(value)
    profile = as_str(raw.get("profile"))
    if not profile:
        return None
    scheduler: SchedulerJson = {"profile": profile}
    if isinstance(memory := raw.get("default_memory_mib"), int) and not isinstance(memory, bool):
        scheduler["default_memory_mib"] = memory
    weights = {
        str(key): weight
        for key, weight in as_map(raw.get("weights")).items()
        if isinstance(weight, int | float) and not isinstance(weight, bool)
    }
    if weights:
        scheduler["weights"] = weights
    if isinstance(weight := raw.get("schedule_weight"), int) and not isinstance(weight, bool):
        scheduler["schedule_weight"] = weight
    return scheduler


def profile_of(data: Mapping[str, Any]) -> str | None:
    """The scheduler profile that judged a diagnosis or plan JSON, when reports name it (they
    read as they always did for cce clusters, and for JSON that names none)."""
    profile = as_str(as_map(data.get("scheduler")).get("profile"))
    return profile if profile and named_in_reports(profile) else None
