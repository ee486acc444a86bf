"""A Kubernetes pod object, as the API returns it, read into its GPU requests and allocations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.core.model import Request
from advisor.core.quantity import decimal_int
from advisor.podspec import fields
from advisor.podspec.allocation import align_allocation, parse_allocation, parse_gpu_index
from advisor.podspec.dialects import (
    CCE,
    CCE_GPU_NUM_LABEL,
    DIALECTS,
    Dialect,
    Lookup,
    asks,
    range_problem,
    read_request,
    resource_lookup,
)
from advisor.podspec.mig import MIG_DIALECT, mig_asks, mig_request
from advisor.podspec.values import AllocatedCard, ContainerGpu, PodGpu
from advisor.words import plural


@dataclass(slots=True)
class _GpuContainer:
    """A GPU container while its pod is read; frozen into ContainerGpu at the end."""

    position: int  # index in spec.containers
    name: str
    where: str  # "container NAME" in problem messages
    dialect: Dialect
    lookup: Lookup
    request: Request | None = None
    allocated: tuple[AllocatedCard, ...] = ()
    container_id: str | None = None
    problems: list[str] = field(default_factory=list)


def _gpu_containers(spec: dict[Any, Any], problems: list[str]) -> list[_GpuContainer]:
    found: list[_GpuContainer] = []
    for i, raw in enumerate(fields.array(spec.get("containers"), "spec.containers", problems)):
        if not isinstance(raw, dict):
            problems.append(f"spec.containers[{i}] is not an object")
            continue
        name = fields.text(raw.get("name"), f"spec.containers[{i}].name", problems, required=True)
        where = f"container {name}" if name else f"container #{i}"
        resources = fields.obj(raw.get("resources"), f"{where}: resources", problems)
        limits = fields.obj(resources.get("limits"), f"{where}: resources.limits", problems)
        requests = fields.obj(resources.get("requests"), f"{where}: resources.requests", problems)
        lookup = resource_lookup(limits, requests)
        asked = [dialect for dialect in DIALECTS if asks(dialect, lookup)]
        if not asked:
            continue
        if len(asked) > 1:
            names = ", ".join(d.name for d in asked)
            problems.append(f"{where} asks in several dialects ({names}); read as {asked[0].name}")
        found.append(_GpuContainer(i, name or "", where, asked[0], lookup))
    return found


def _mig_containers(spec: dict[Any, Any]) -> list[tuple[str, dict[str, object]]]:
    """(name, profile -> value asked) of each container asking MIG instances (`podspec.mig`);
    what is unreadable in them `_gpu_containers` reports."""
    found = []
    containers = spec.get("containers")
    for i, raw in enumerate(containers if isinstance(containers, list) else []):
        if not isinstance(raw, dict):
            continue
        resources = raw.get("resources")
        resources = resources if isinstance(resources, dict) else {}
        limits, requests = resources.get("limits"), resources.get("requests")
        asks = mig_asks(
            limits if isinstance(limits, dict) else {},
            requests if isinstance(requests, dict) else {},
        )
        if asks:
            name = raw.get("name")
            found.append((name if isinstance(name, str) and name else f"#{i}", asks))
    return found


def _label_gpus(labels: Mapping[str, str], problems: list[str]) -> int | None:
    value = labels.get(CCE_GPU_NUM_LABEL)
    if value is None:
        return 1
    try:
        return decimal_int(value)
    except ValueError as error:
        problems.append(f"label {CCE_GPU_NUM_LABEL} {error}")
        return None


def _container_ids(status: dict[Any, Any], problems: list[str]) -> dict[str, str | None]:
    ids: dict[str, str | None] = {}
    statuses = fields.array(status.get("containerStatuses"), "status.containerStatuses", problems)
    for i, raw in enumerate(statuses):
        where = f"status.containerStatuses[{i}]"
        if not isinstance(raw, dict):
            problems.append(f"{where} is not an object")
            continue
        name = fields.text(raw.get("name"), f"{where}.name", problems, required=True)
        if name is not None:
            ids[name] = fields.container_id(
                raw.get("containerID"), f"{where}.containerID", problems
            )
    return ids


def _per_card(total: int, gpus: int) -> int | None:
    return total // gpus if gpus > 0 and total % gpus == 0 else None


def _allocate_cce(value: str, containers: list[_GpuContainer]) -> None:
    """Every CCE container shares the pod's cards; the annotation holds indices only, so the
    per-card memory and core come from the container's own even split."""
    cards = parse_gpu_index(value)
    for container in containers:
        request = container.request
        container.allocated = tuple(
            AllocatedCard(
                card=card.card,
                memory_mib=_per_card(request.memory_mib, request.gpus) if request else None,
                core_percent=_per_card(request.core_percent, request.gpus) if request else None,
            )
            for card in cards
        )


def _allocate(
    dialect: Dialect,
    value: str,
    containers: list[_GpuContainer],
    spec: dict[Any, Any],
) -> None:
    if dialect is CCE:
        _allocate_cce(value, containers)
        return
    n_init = len(spec["initContainers"]) if isinstance(spec.get("initContainers"), list) else 0
    n_containers = len(spec["containers"]) if isinstance(spec.get("containers"), list) else 0
    positions = [c.position for c in containers]
    aligned = align_allocation(parse_allocation(value), n_init, n_containers, positions)
    for container in containers:
        container.allocated = aligned.get(container.position, ())


def _read_allocations(
    containers: list[_GpuContainer],
    annotations: Mapping[str, str],
    spec: dict[Any, Any],
    problems: list[str],
) -> None:
    for dialect in DIALECTS:
        mine = [c for c in containers if c.dialect is dialect]
        value = annotations.get(dialect.allocation)
        if not mine or value is None:
            continue
        try:
            _allocate(dialect, value, mine, spec)
        except ValueError as error:
            problems.append(f"annotation {dialect.allocation}: {error}")
            continue
        for c in mine:
            if c.request is not None and c.allocated and len(c.allocated) != c.request.gpus:
                problems.append(
                    f"{c.where}: annotation {dialect.allocation} lists "
                    f"{plural(len(c.allocated), 'card')}, the request asks {c.request.gpus}"
                )


def _pod_request(containers: list[_GpuContainer], problems: list[str]) -> Request | None:
    """The pod's totals for the scheduler model.

    Modelling assumption: several GPU containers of one pod that ask the same N are placed
    as one request on the same N cards, so their memory, share and core add up per card.
    Different N, mixed dialects, containers asking in different forms (MiB, a share, whole
    cards), several asking whole cards, or an unreadable container leave the pod without a
    request.
    """
    dialects = list(dict.fromkeys(c.dialect.name for c in containers))
    if len(dialects) > 1:
        problems.append(
            f"pod mixes dialects ({', '.join(dialects)}); read as {dialects[0]}, not modelled"
        )
        return None
    requests = [c.request for c in containers]
    if any(r is None for r in requests):
        return None
    known = [r for r in requests if r is not None]
    if len(known) == 1:
        return known[0]
    if len({r.gpus for r in known}) > 1:
        problems.append(f"{len(known)} GPU containers with different card counts are not modelled")
        return None
    forms = {(r.memory_mib > 0, r.memory_percent > 0) for r in known}
    if len(forms) > 1 or forms == {(False, False)}:
        problems.append(
            f"{len(known)} GPU containers asking whole cards, or memory in different forms "
            "(MiB, a share of the card), are not modelled"
        )
        return None
    share = sum(r.memory_percent for r in known)
    if share > 100:
        problems.append(f"{len(known)} GPU containers ask {share}% of each card together")
        return None
    return Request(
        gpus=known[0].gpus,
        memory_mib=sum(r.memory_mib for r in known),
        core_percent=sum(r.core_percent for r in known),
        memory_percent=share,
    )


def parse_pod(obj: object) -> PodGpu | None:
    """One pod's GPU view; None when nothing in it asks for a GPU (or it is not an object).

    Never raises: every unreadable value becomes an entry of `problems` naming the field.
    Init containers are ignored.
    """
    if not isinstance(obj, dict):
        return None
    problems: list[str] = []
    metadata = fields.obj(obj.get("metadata"), "metadata", problems)
    spec = fields.obj(obj.get("spec"), "spec", problems)
    status = fields.obj(obj.get("status"), "status", problems)
    containers = _gpu_containers(spec, problems)
    migs = _mig_containers(spec)
    if not containers and not migs:
        return None
    if containers and migs:
        problems.append("the pod asks MIG instances beside shared GPUs; its MIG part is ignored")

    labels = fields.string_map(metadata.get("labels"), "metadata.labels", problems)
    annotations = fields.string_map(metadata.get("annotations"), "metadata.annotations", problems)
    label_gpus = _label_gpus(labels, problems) if any(c.dialect is CCE for c in containers) else 1
    for c in containers:
        c.request = read_request(c.dialect, c.lookup, label_gpus, c.where, problems)
    _read_allocations(containers, annotations, spec, problems)
    ids = _container_ids(status, problems)
    request = _pod_request(containers, problems) if containers else mig_request(migs, problems)
    if request is not None and (beyond := range_problem(request)) is not None:
        problems.append(f"the pod's containers together ask {beyond}")
        request = None

    namespace = fields.text(
        metadata.get("namespace"), "metadata.namespace", problems, required=True
    )
    return PodGpu(
        namespace=namespace or "",
        name=fields.text(metadata.get("name"), "metadata.name", problems, required=True) or "",
        uid=fields.text(metadata.get("uid"), "metadata.uid", problems, required=True) or "",
        node=fields.text(spec.get("nodeName"), "spec.nodeName", problems) or None,
        phase=fields.text(status.get("phase"), "status.phase", problems) or "Unknown",
        priority=fields.integer(spec.get("priority"), "spec.priority", problems, 0),
        owner=fields.owner(metadata.get("ownerReferences"), namespace or "", problems),
        created=fields.text(
            metadata.get("creationTimestamp"), "metadata.creationTimestamp", problems
        ),
        annotations=annotations,
        dialect=containers[0].dialect.name if containers else MIG_DIALECT,
        containers=tuple(
            ContainerGpu(
                name=c.name,
                container_id=ids.get(c.name),
                request=c.request,
                allocated=c.allocated,
            )
            for c in containers
        )
        or tuple(ContainerGpu(name, ids.get(name), None) for name, _ in migs),
        request=request,
        problems=tuple(problems),
    )
