"""Volcano's vGPU MIG mode, differentially (docs/conformance.md): drawn cases through
Volcano v1.15.1's own code (the volcano-mig harness, conformance/volcano/migcards) and through
advisor/core/profiles/volcano_mig.py, every step compared.

A case: `knownMigGeometries` (card types, groups of templates), a node's cards with their
registered mode and type, `gpuMemoryFactor`, and on one card a sequence of pods added and
removed. Compared: the node's mode, each card's groups, and after each step whether the pod
fit, the instance id, the card's used memory, the group in use and the instances held.

    python -m conformance.volcano_mig_compare [-n 500] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from typing import Any

from advisor.core.profiles.volcano_mig import (
    MIG,
    Geometry,
    KnownGeometries,
    MigTemplate,
    MigUse,
    instance_id,
    node_mode,
    parse_instance_id,
    release,
    take,
    try_add,
)
from conformance import harness

NAMES = ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
MEMORY = (5000, 10240, 10240, 20480, 40960, 40960, 81920)
TYPES = ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA L40S")
MODELS = ("A100", "H100", "H100", "80GB", "L40S", "B200")
MODES = ("mig", "mig", "mig", "hami-core", "mps", "")
GROUPS = ("g0", "g1", "g2", "group-a")  # a dash: Volcano cannot read its instance ids back


def draw(rng: random.Random) -> dict[str, Any]:
    """One case, in the harness's JSON (Go's field names: Volcano's config has no JSON tags)."""
    known = []
    for _ in range(rng.randint(1, 2)):
        groups = []
        for g in rng.sample(GROUPS, rng.randint(1, 3)):
            templates = [
                {
                    "name": rng.choice(NAMES),
                    "memory": rng.choice(MEMORY),
                    "count": rng.randint(1, 4),
                }
                for _ in range(rng.randint(1, 3))
            ]
            groups.append({"group": g, "instances": templates})
        known.append({"models": rng.sample(MODELS, rng.randint(1, 2)), "geometries": groups})
    cards = [
        {"mode": rng.choice(MODES), "type": rng.choice(TYPES)} for _ in range(rng.randint(1, 3))
    ]
    ops: list[dict[str, int]] = []
    for k in range(rng.randint(1, 14)):
        if k and rng.random() < 0.25:
            ops.append({"sub": rng.randrange(k)})
        else:
            ops.append({"add": rng.choice((1, 5000, 10240, 15000, 20480, 40000, 81920))})
    return {
        "factor": rng.choice((0, 1, 1, 2, 4)),
        "known": known,
        "cards": cards,
        "card": rng.randrange(len(cards)),
        "ops": ops,
    }


def _known(case: dict[str, Any]) -> tuple[KnownGeometries, ...]:
    return tuple(
        KnownGeometries(
            tuple(entry["models"]),
            tuple(
                Geometry(
                    g["group"],
                    tuple(MigTemplate(t["name"], t["memory"], t["count"]) for t in g["instances"]),
                )
                for g in entry["geometries"]
            ),
        )
        for entry in case["known"]
    )


def advisor_side(case: dict[str, Any]) -> dict[str, Any]:
    """What the advisor's volcano_mig does with the case, in the harness's JSON."""
    cards = [(c["mode"], c["type"]) for c in case["cards"]]
    mode, groups = node_mode(cards, _known(case))
    answer: dict[str, Any] = {"mode": mode, "groups": [[g.group for g in gs] for gs in groups]}
    if mode != MIG:
        return answer
    geometries, factor = groups[case["card"]], case["factor"]
    use, used_mem, ids = MigUse(), 0, {}
    steps = []
    for k, op in enumerate(case["ops"]):
        step: dict[str, Any] = {"fit": False, "id": ""}
        if "add" in op:
            found = try_add(geometries, use, op["add"], factor)
            if found is not None:
                match = found[0]
                step["fit"] = True
                step["id"] = instance_id(
                    f"GPU-{case['card']}", geometries[match.group].group, match.position
                )
                try:
                    group, position = parse_instance_id(step["id"])
                except ValueError as error:
                    step["error"] = str(error)
                else:
                    use, memory = take(geometries, use, group, position)
                    used_mem += memory // factor if factor > 1 else memory
                    ids[k] = (group, position)
        elif op["sub"] in ids:
            group, position = ids.pop(op["sub"])
            use, memory = release(geometries, use, group, position)
            used_mem -= memory // factor if factor > 1 else memory
        step["used_mem"] = used_mem
        step["group"] = -1 if use.group is None else use.group
        step["usage"] = [{"name": n, "used": list(idx)} for n, _, idx in use.used]
        steps.append(step)
    answer["steps"] = steps
    return answer


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    out = [f"{key}: advisor {ours.get(key)}, upstream {theirs.get(key)}"
           for key in ("mode", "groups") if ours.get(key) != theirs.get(key)]  # fmt: skip
    pairs = zip(ours.get("steps") or [], theirs.get("steps") or [], strict=False)
    for k, (mine, up) in enumerate(pairs):
        mine.setdefault("error", "")
        up.setdefault("error", "")
        # Go's error texts wrap decodeMIGID's; the advisor's are decodeMIGID's own.
        same_error = bool(mine["error"]) == bool(up["error"])
        keys = ("fit", "id", "used_mem", "group", "usage")
        if not same_error or any(mine[key] != up[key] for key in keys):
            out.append(f"step {k}: advisor {mine}, upstream {up}")
    if len(ours.get("steps") or []) != len(theirs.get("steps") or []):
        out.append("steps: not as many")
    return out


def run_harness(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(harness.binary("volcano-mig"))],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise harness.HarnessError(f"volcano-mig failed: {done.stderr[-2000:]}")
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    return answers


def compare(n: int, seed: int) -> tuple[int, int, int, list[str]]:
    """(cases, with a mig node, steps, the first disagreements) over `n` drawn cases."""
    rng = random.Random(seed)
    cases = [draw(rng) for _ in range(n)]
    answers = run_harness(cases)
    steps = sum(len(a.get("steps") or []) for a in answers)
    mig = sum(a["mode"] == MIG for a in answers)
    wrong: list[str] = []
    for i, (case, theirs) in enumerate(zip(cases, answers, strict=True)):
        diffs = differences(advisor_side(case), theirs)
        if diffs:
            wrong.append("\n  ".join((f"case {i}: {json.dumps(case)}", *diffs)))
    return n, mig, steps, wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.volcano_mig_compare")
    parser.add_argument("-n", type=int, default=500, help="cases to draw")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n, mig, steps, wrong = compare(args.n, args.seed)
    print(*wrong[:5], sep="\n")
    print(
        f"volcano-mig: {n - len(wrong)}/{n} cases agree ({mig} with a mig node, "
        f"{steps} steps), seed {args.seed}"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
