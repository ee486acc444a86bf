"""The scheduler profiles (docs/design.md §9.2), one module each, and their registry.

kube-scheduler's own filters (core.nodefilters) run the same way under every profile; what
differs is the profile: its GPU filter, which cards a pod gets and which node wins, its words,
defaults and marks:

- `cce` (profiles.cce): CCE xGPU, the even split of §1–§2;
- `hami` (profiles.hami): HAMi v2.10's NvidiaGPUDevices.Fit and its float32 scores;
- `volcano-vgpu` (profiles.volcano_vgpu): Volcano v1.15's vGPU device share.

A new profile is one module implementing `Profile` and one `register` call; nothing outside
this package compares a profile's name (tests/advisor/core/test_profile_registry.py).
"""

from __future__ import annotations

from advisor.core.model import Scheduler
from advisor.core.profiles.base import Profile
from advisor.core.profiles.cce import CceProfile
from advisor.core.profiles.hami import HamiProfile
from advisor.core.profiles.volcano_vgpu import VolcanoProfile

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "Profile",
    "named_in_reports",
    "profile_for",
    "profile_names",
    "profile_of",
    "register",
    "unregister",
]

# name -> profile, in registration order (the order help texts and choices list them).
PROFILES: dict[str, Profile] = {}
DEFAULT_PROFILE = "cce"  # a scenario or live cluster that names none


def register(profile: Profile) -> Profile:
    """Make `profile` known by its name to every command, scenario and source."""
    if profile.name in PROFILES or profile.name == "auto":
        raise ValueError(f"profile {profile.name!r} is already registered (or reserved)")
    PROFILES[profile.name] = profile
    return profile


def unregister(name: str) -> None:
    """Forget a profile (a test's toy one)."""
    del PROFILES[name]


def profile_names() -> tuple[str, ...]:
    return tuple(PROFILES)


def profile_for(name: str) -> Profile:
    """The registered profile of that name, with its default settings; KeyError if none."""
    return PROFILES[name]


def profile_of(scheduler: Scheduler) -> Profile:
    """The cluster's profile with the cluster's settings."""
    return profile_for(scheduler.profile).configured(scheduler)


def named_in_reports(name: str) -> bool:
    """Whether reports name this profile (a name not registered, from a JSON file: yes)."""
    profile = PROFILES.get(name)
    return profile is None or profile.named_in_reports


register(CceProfile())
register(HamiProfile())
register(VolcanoProfile())
