"""The scenario's `scheduler:` block and each profile's defaults (docs/design.md §9.2).

```yaml
scheduler:
  profile: hami                 # cce (default) | hami | volcano-vgpu
  default_memory_mib: 0         # hami: memory of a request that gives none; 0: the whole card
  weights: {slot: 1, core: 1, memory: 1}   # hami: device scoring weights
  schedule_weight: 0            # volcano-vgpu: deviceshare.ScheduleWeight
```

A key of another profile is refused, so a scenario never silently carries a setting that
does nothing. `policy` and `max_vgpus_per_card` default per profile.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from advisor.core.model import CCE, WEIGHT_KEYS, Cluster, Policy, PolicyName, ProfileName, Scheduler
from advisor.core.profiles import DEFAULT_PROFILE, PROFILES, Profile, profile_for
from advisor.defaults import NODE_POLICIES as DEFAULT_NODE_POLICIES
from advisor.scenario.jobs import SESSION_KEYS, read_session_setting, session_setting_data
from advisor.scenario.strict import Reader, kind

NODE_POLICIES: tuple[PolicyName, ...] = DEFAULT_NODE_POLICIES


def defaults(profile: ProfileName) -> tuple[Policy, tuple[PolicyName, ...], int]:
    """(default policy, card policies it knows, default max vGPUs per card) of a profile."""
    p = profile_for(profile)
    return p.default_policy, p.card_policies, p.default_max_vgpus


def _owners(key: str) -> list[Profile]:
    """The profiles whose setting `key` is (the session's are several profiles')."""
    return [p for p in PROFILES.values() if key in p.settings]


def _setting_keys() -> list[str]:
    """Every profile's settings, in registration order."""
    return list(dict.fromkeys(key for p in PROFILES.values() for key in p.settings))


def read_scheduler(r: Reader, raw: object) -> Scheduler:
    """The `scheduler:` block."""
    keys = _setting_keys()
    m = r.mapping(raw, "scheduler", {"profile", *keys}, set())
    profile = m.get("profile", DEFAULT_PROFILE)
    if not isinstance(profile, str) or profile not in PROFILES:
        raise r.fail(
            "scheduler.profile", f"expected one of {', '.join(PROFILES)}, got {kind(profile)}"
        )
    settings: dict[str, Any] = {}
    for key in keys:
        if key not in m:
            continue
        if key not in profile_for(profile).settings:
            owners = _owners(key)
            named = " and ".join(o.name for o in owners) if owners else "another profile's"
            raise r.fail(f"scheduler.{key}", f"a {named} setting; profile {profile} has none")
        if key == "weights":
            settings[key] = _weights(r, m[key])
        elif key in SESSION_KEYS:
            settings[key] = read_session_setting(r, key, m[key])
        else:
            settings[key] = r.integer(m[key], f"scheduler.{key}", 0)
    if settings.get("enable_hierarchy") and settings.get("queue_plugin") != "capacity":
        raise r.fail(
            "scheduler.enable_hierarchy",
            "the capacity plugin's option: it needs queue_plugin: capacity",
        )
    if settings.get("ancestor_reclaim_level") and not settings.get("enable_hierarchy"):
        raise r.fail(
            "scheduler.ancestor_reclaim_level",
            "capacity's hierarchy argument: it needs enable_hierarchy: true",
        )
    return Scheduler(profile=profile, **settings)


def _weights(r: Reader, raw: object) -> tuple[int, int, int]:
    where = "scheduler.weights"
    m = r.mapping(raw, where, set(WEIGHT_KEYS), set(WEIGHT_KEYS))
    values = tuple(r.integer(m[k], f"{where}.{k}", 0) for k in WEIGHT_KEYS)
    if not any(values):
        raise r.fail(where, "at least one weight must be positive (as HAMi requires)")
    if max(values) > 2**31:
        raise r.fail(where, "weights above 2147483648 are not modelled")
    return (values[0], values[1], values[2])


def read_policy(r: Reader, raw: object, scheduler: Scheduler) -> Policy:
    default, card_policies, _ = defaults(scheduler.profile)
    m = r.mapping(raw, "policy", {"node", "card"}, set())
    node = m.get("node", default.node)
    if node not in NODE_POLICIES:
        raise r.fail("policy.node", f"expected one of {', '.join(NODE_POLICIES)}, got {kind(node)}")
    card = m.get("card", default.card)
    if card not in card_policies:
        raise r.fail(
            "policy.card",
            f"expected one of {', '.join(card_policies)} under {scheduler.profile}, "
            f"got {kind(card)}",
        )
    return Policy(node, card)


def default_max_vgpus(scheduler: Scheduler) -> int:
    return profile_for(scheduler.profile).default_max_vgpus


def scheduler_data(scheduler: Scheduler) -> dict[str, Any] | None:
    """The block as written back; None for plain CCE, so older scenarios stay as they were."""
    if scheduler == CCE:
        return None
    data: dict[str, Any] = {"profile": scheduler.profile}
    for key in profile_for(scheduler.profile).settings:
        value = getattr(scheduler, key)
        if value != getattr(CCE, key):  # a setting at its default is left out
            if key == "weights":
                value = dict(zip(WEIGHT_KEYS, value, strict=True))
            elif key in SESSION_KEYS:
                value = session_setting_data(key, value)
            data[key] = value
    return data


def retarget(cluster: Cluster, profile: ProfileName) -> Cluster:
    """The same cluster judged under another profile, for comparing schedulers. The policy
    and vGPU limit follow the new profile's defaults where the cluster had the old one's
    (or a card policy the new profile lacks); settings of the old profile are dropped."""
    if cluster.scheduler.profile == profile:
        return cluster
    old_policy, _, old_limit = defaults(cluster.scheduler.profile)
    new_policy, card_policies, new_limit = defaults(profile)
    policy = cluster.policy
    if policy == old_policy or policy.card not in card_policies:
        policy = Policy(policy.node if policy != old_policy else new_policy.node, new_policy.card)
    limit = new_limit if cluster.max_vgpus_per_card == old_limit else cluster.max_vgpus_per_card
    return dataclasses.replace(
        cluster, scheduler=Scheduler(profile), policy=policy, max_vgpus_per_card=limit
    )
