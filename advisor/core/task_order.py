"""Volcano's task order within a job (ssn.TaskOrderFn), read from Volcano v1.15.1: the
priority plugin's taskOrderFn (the higher pod priority first, equal: no say), then
`controllers/job/helpers/helpers.go` CompareTask: two pods whose names both end in a
number after at least two dashes (a Volcano Job's `<job>-<task>-<index>`, read by
GetPodIndexUnderTask and strconv.Atoi) by that index, the lower first; otherwise, or on
equal indices, the older (creation: the pods' listing order stands in, and for the UID
that breaks equal creation times)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from advisor.core.model import Pod

# strconv.Atoi: an optional sign, then ASCII digits
_INDEX = re.compile(r"[+-]?[0-9]+")


def pod_index(pod: Pod) -> int | None:
    """GetPodIndexUnderTask: the name's last dash-separated part where it has three or
    more, read as an integer; None where there are fewer or it does not read."""
    parts = pod.name.split("/", 1)[-1].split("-")
    if len(parts) < 3 or _INDEX.fullmatch(parts[-1]) is None:
        return None
    return int(parts[-1])


def task_order(pods: Iterable[Pod]) -> list[Pod]:
    """The pods in TaskOrderFn's order, each pod's position in `pods` its creation."""
    items = [(i, p, pod_index(p)) for i, p in enumerate(pods)]

    def compare(left: tuple[int, Pod, int | None], right: tuple[int, Pod, int | None]) -> int:
        (li, lp, lx), (ri, rp, rx) = left, right
        if lp.priority != rp.priority:
            return -1 if lp.priority > rp.priority else 1
        if lx is not None and rx is not None and lx != rx:
            return -1 if lx < rx else 1
        return (li > ri) - (li < ri)

    return [p for _, p, _ in sorted(items, key=functools.cmp_to_key(compare))]
