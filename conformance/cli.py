"""`python -m conformance.cli`: the differential test's command (docs/conformance.md).

    python -m conformance.cli [-n 200] [--seed 0] [--out out/conformance] [SCENARIO...]

Generates clusters, runs each through the upstream schedulers' own code and the advisor, and
prints one agreement line per upstream, each disagreement shrunk into --out.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from conformance import (
    harness,
    placements,
    preempt_compare,
    session_compare,
    session_preempt,
    volcano_compare,
)
from conformance.compare import run_files, run_generated, shrink
from conformance.generate import PROFILES, generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.cli", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("-n", type=int, default=200, help="generated clusters (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("out/conformance"))
    parser.add_argument("scenarios", nargs="*", type=Path)
    args = parser.parse_args(argv)
    missing = harness.go_missing()
    if missing is not None:
        print(f"conformance: {missing}", file=sys.stderr)
        return 2
    for profile in PROFILES:
        clusters, pods, agree, words, written = run_generated(args.n, args.seed, args.out, profile)
        print(
            f"agreement: {agree}/{pods} pods on {clusters} clusters "
            f"({profile}: kube-scheduler filters)"
        )
        print(
            f"  word for word: {words}/{pods} pods (docs/conformance.md: TaintToleration's message)"
        )
        for path in written:
            print(f"  disagreement, shrunk: {path}")
        datas = [generate(args.seed + i, profile=profile) for i in range(args.n)]
        steps, same, placed, refused, diffs = placements.check(datas)
        print(
            f"  the advisor's cycle: {same}/{steps} pods agree; {refused} of its {placed} "
            "placements refused by kube-scheduler"
        )
        for d in diffs[:20]:
            print(f"    {d}")
    _preemption(args.n, args.seed, args.out)
    _mig(args.n, args.seed, args.out)
    datas = [generate(args.seed + i, profile="volcano-vgpu") for i in range(args.n)]
    rows = volcano_compare.check(datas)
    pods = sum(n for n, _ in rows)
    agree = sum(n - len({d.split(":", 1)[0] for d in diffs}) for n, diffs in rows)
    print(
        f"agreement: {agree}/{pods} pods on {args.n} clusters "
        "(volcano-vgpu: Volcano v1.15.1's vGPU device code, node and cards)"
    )
    for i, (data, (_, diffs)) in enumerate(zip(datas, rows, strict=True)):
        if diffs:
            args.out.mkdir(parents=True, exist_ok=True)
            small = shrink(data, volcano_compare.disagrees)
            path = args.out / f"volcano-vgpu-seed-{args.seed + i}.json"
            again = volcano_compare.check([small])[0][1]
            path.write_text(json.dumps({"differs": again, "scenario": small}, indent=2) + "\n")
            print(f"  disagreement, shrunk: {path}")
    _session(args.n, args.seed)
    print("\n".join(session_preempt.report(args.n, args.seed)))
    if args.scenarios:
        n, a, _, diffs = run_files(args.scenarios)
        print(
            f"agreement: {a}/{n} pods in {len(args.scenarios)} scenario files "
            "(kube-scheduler filters)"
        )
        for d in diffs:
            print(f"  {d}")
        files, pods, diffs = session_preempt.run_files(args.scenarios)
        explained = [d for d in diffs if d.startswith(session_compare.EXPLAINED)]
        print(
            f"{len(diffs) - len(explained)} differences ({len(explained)} more explained) for "
            f"{pods} pods in {files} volcano-vgpu scenario files (Volcano v1.14.1's session: "
            "placed or not, node, gang states, preemption)"
        )
        for d in diffs:
            print(f"  {d}")
    return 0


def _preemption(n: int, seed: int, out: Path) -> None:
    """kube-scheduler's DefaultPreemption beside the advisor's hami verdicts."""
    clusters, pods, agree, skipped, (worded, same), written = preempt_compare.run_generated(
        n, seed, out
    )
    print(
        f"agreement: {agree}/{pods} pods on {clusters} clusters (hami: kube-scheduler's "
        "DefaultPreemption, verdict, node within the tied set, victims)"
    )
    print(f"  not compared, the GPU decides (fits once earlier victims are gone): {skipped}")
    print(f"  upstream's words begin the advisor's message: {same}/{worded}")
    for path in written:
        print(f"  disagreement, shrunk: {path}")


def _mig(n: int, seed: int, out: Path) -> None:
    """MIG instances as kube-scheduler counts them (nvidia.com/mig-<profile>), beside the
    advisor's MIG cycle and its MIG preemption, on clusters with MIG (generate_mig.py)."""
    for profile in ("hami", "cce"):
        clusters, pods, agree, _, written = run_generated(n, seed, out, profile, mig=True)
        datas = [generate(seed + i, profile=profile, mig=True) for i in range(n)]
        steps, same, placed, refused, diffs = placements.check(datas)
        print(
            f"agreement: {agree}/{pods} pods on {clusters} clusters with MIG ({profile}: "
            f"kube-scheduler filters); the advisor's cycle: {same}/{steps} pods agree, "
            f"{refused} of its {placed} placements refused"
        )
        for line in [*map(str, written), *diffs[:20]]:
            print(f"  {line}")
    clusters, pods, agree, skipped, _, written = preempt_compare.run_generated(
        n, seed, out, mig=True
    )
    print(
        f"agreement: {agree}/{pods} pods on {clusters} clusters with MIG (hami: "
        f"kube-scheduler's DefaultPreemption); not compared: {skipped}"
    )
    for path in written:
        print(f"  disagreement, shrunk: {path}")


def _session(n: int, seed: int) -> None:
    """Volcano v1.14.1's session beside the advisor's job cycle, on clusters with gangs."""
    datas = [session_compare.generate_gangs(seed + i) for i in range(n)]
    rows = session_compare.check(datas)
    pods = sum(row.pods for row in rows)
    kept = [d for row in rows if not row.apart for d in row.diffs]
    explained = [d for d in kept if d.startswith(session_compare.EXPLAINED)]
    why = [d for d in explained if d.startswith(session_compare.EXPLAINED + "group ")]
    record = (session_compare.CAUSE, session_compare.REACHED)
    pod_diffs = [
        d for d in kept if not d.startswith(("group ", *record, session_compare.EXPLAINED))
    ]
    states = [d for d in kept if d.startswith("group ")]
    leaked = sum(1 for row in rows if row.apart)
    groups = sum(len(d.get("groups", [])) for d in datas)
    compared = sum(
        len(d.get("groups", [])) for d, row in zip(datas, rows, strict=True)
        if not row.apart
    )  # fmt: skip
    queued = sum(1 for d in datas if d.get("queues"))
    mig = sum(1 for d in datas if any("mig" in c for node in d["nodes"] for c in node["cards"]))
    print(
        f"agreement: {pods - len(pod_diffs)}/{pods} pods, {groups} gangs on {n} clusters, "
        f"{queued} with queues, {mig} with MIG (volcano-vgpu: Volcano v1.14.1's session, "
        f"placed or not and node); gang states: {compared - len(states) - len(why)}/"
        f"{compared} outside the clusters counted apart"
    )
    print(f"  gang states apart: {len(states)}")
    print(
        "  gangs enqueue leaves Pending for the cluster's size, tried by the advisor's "
        f"node cycle (explained): {len(why)}"
    )
    print(f"  clusters apart where v1.14.1 kept a discarded pod's cards (explained): {leaked}")
    for line in _causes(rows):
        print(line)
    for d in (pod_diffs + states)[:20]:
        print(f"    {d}")


def _causes(rows: list[session_compare.Row]) -> list[str]:
    """What Volcano records for the pods both sides leave Pending, against the advisor's
    prediction, and where the advisor's own cause words it otherwise (docs/conformance.md)."""
    kept = [row for row in rows if not row.apart]
    classes: Counter[str] = Counter()
    worded: Counter[str] = Counter()
    for row in kept:
        classes.update(row.classes)
        worded.update(row.worded)
    lines = [d for row in kept for d in row.diffs]
    apart = [d for d in lines if d.startswith(session_compare.CAUSE)]
    unreached = [d for d in lines if d.startswith(session_compare.REACHED)]
    total = sum(classes.values())
    named = ", ".join(f"{classes[c]} {c}" for c in session_compare.CLASSES if classes[c])
    out = [
        "  what Volcano records for the pods both sides leave Pending (a fit error of its "
        f"own, its queue's refusal or its job's): {total - len(apart)}/{total} agree "
        f"(upstream: {named}); allocate reached the pod or not: "
        f"{total - len(unreached)}/{total} agree"
    ]
    out += [
        f"  the advisor's own cause beside that record, {text}: {k}"
        for text, k in sorted(worded.items())
    ]
    out += [f"    {d}" for d in (apart + unreached)[:20]]
    return out


if __name__ == "__main__":
    sys.exit(main())
