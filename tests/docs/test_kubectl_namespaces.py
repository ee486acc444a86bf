"""Every `kubectl -n NS ...` in README.md, deploy/README.md and docs/*.md that names one of
the deployed objects sends it to the namespace where that object lives, as
`kubectl kustomize deploy/base` renders them.

A command names objects by `KIND/NAME` (`ds/xgpu-exporter`, `--from=cronjob/xgpu-advisor`),
by `KIND NAME` after its verb (`get ds xgpu-exporter`), by a label selector (`-l
app.kubernetes.io/name=xgpu-exporter`: the workloads whose pods carry it, and the objects
labelled so), or by a placeholder (`<exporter pod>`, `job/<job>`: the pods of the workload
whose name holds the word; the Jobs of the CronJob). Jobs a document creates from a CronJob
live where it does; a pod a document creates (a heredoc) lives where its claims do.
Commands are read from fenced shell blocks, one line each (continuations joined), and from
inline code spans, which may wrap over a line break.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.builds import kustomize
from tests.deploy.pod_security import WORKLOAD_KINDS, pod_template
from tests.docs.test_readme_commands import parse_blocks

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", REPO / "deploy" / "README.md", *sorted(REPO.glob("docs/*.md"))]
SHELL = {"sh", "bash", "shell", "console"}
# kubectl's names and short names for the kinds the manifests hold (`kubectl api-resources`).
KINDS = {
    **dict.fromkeys(["ds", "daemonset", "daemonsets"], "DaemonSet"),
    **dict.fromkeys(["deploy", "deployment", "deployments"], "Deployment"),
    **dict.fromkeys(["svc", "service", "services"], "Service"),
    **dict.fromkeys(["cj", "cronjob", "cronjobs"], "CronJob"),
    **dict.fromkeys(["job", "jobs"], "Job"),
    **dict.fromkeys(["po", "pod", "pods"], "Pod"),
    **dict.fromkeys(["pvc", "persistentvolumeclaim", "persistentvolumeclaims"], "PVC"),
    **dict.fromkeys(["cm", "configmap", "configmaps"], "ConfigMap"),
    **dict.fromkeys(["sa", "serviceaccount", "serviceaccounts"], "ServiceAccount"),
    **dict.fromkeys(["netpol", "networkpolicy", "networkpolicies"], "NetworkPolicy"),
    **dict.fromkeys(["servicemonitor", "servicemonitors"], "ServiceMonitor"),
    **dict.fromkeys(["podmonitor", "podmonitors"], "PodMonitor"),
    **dict.fromkeys(["prometheusrule", "prometheusrules"], "PrometheusRule"),
}
MANIFEST_KIND = {"PVC": "PersistentVolumeClaim"}
PLACEHOLDER = re.compile(r"<([^<>]+)>")
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Command:
    where: str  # "docs/runbooks.md:21"
    text: str


@dataclass(frozen=True, slots=True)
class Named:
    what: str  # "DaemonSet xgpu-exporter", "pods of DaemonSet xgpu-exporter"
    namespaces: frozenset[str]  # where it lives


class Cluster:
    """The deployed objects, by kind and name, with their labels and their pods' labels."""

    def __init__(self, documents: list[Json]) -> None:
        self.documents = documents
        self.created: dict[tuple[str, str], frozenset[str]] = {}  # by the documents

    def by_name(self, kind: str, name: str) -> Named | None:
        if (kind, name) in self.created:
            return Named(f"{kind} {name}", self.created[kind, name])
        found = frozenset(
            d["metadata"].get("namespace", "")
            for d in self.documents
            if d["kind"] == MANIFEST_KIND.get(kind, kind) and d["metadata"]["name"] == name
        )
        if found:
            return Named(f"{kind} {name}", found)
        if kind == "Job":  # a Job of any name comes from the CronJob (`create job --from`)
            return self.of_kind("CronJob", "Jobs of")
        return None

    def of_kind(self, kind: str, prefix: str) -> Named | None:
        owners = [d for d in self.documents if d["kind"] == kind]
        if not owners:
            return None
        names = ", ".join(d["metadata"]["name"] for d in owners)
        return Named(f"{prefix} {kind} {names}", self.namespaces(owners))

    def pods_of_word(self, word: str) -> Named | None:
        """`<exporter pod>`: the pods of the workloads whose name holds `exporter`."""
        owners = [
            d
            for d in self.documents
            if d["kind"] in WORKLOAD_KINDS and word in d["metadata"]["name"].split("-")
        ]
        if not owners:
            return None
        names = ", ".join(f"{d['kind']} {d['metadata']['name']}" for d in owners)
        return Named(f"pods of {names}", self.namespaces(owners))

    def selected(self, selector: str) -> Named | None:
        """The workloads whose pods, and the objects that, carry every `key=value`."""
        wanted = dict(part.split("=", 1) for part in selector.split(",") if "=" in part)
        if not wanted:
            return None

        def carries(labels: Json | None) -> bool:
            return all((labels or {}).get(k) == v for k, v in wanted.items())

        # Cluster-scoped objects (a ClusterRole) are in no namespace a -n could name.
        namespaced = [d for d in self.documents if "namespace" in d["metadata"]]
        matching = [
            d
            for d in namespaced
            if carries(d["metadata"].get("labels"))
            or (d["kind"] in WORKLOAD_KINDS and carries(pod_template(d)["metadata"].get("labels")))
        ]
        if not matching:
            return None
        return Named(f"objects and pods labelled {selector}", self.namespaces(matching))

    @staticmethod
    def namespaces(documents: list[Json]) -> frozenset[str]:
        return frozenset(d["metadata"].get("namespace", "") for d in documents)


# --- reading the documents -------------------------------------------------------------


def commands(path: Path) -> Iterator[Command]:
    """The kubectl commands of a document, fenced lines and inline spans, in order."""
    name = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
    text = path.read_text()
    lines = text.splitlines()
    prose = list(lines)
    for block in parse_blocks(text, name):
        opening, closing = block.lines
        prose[opening : closing + 1] = [""] * (closing + 1 - opening)
        if block.language in SHELL:
            yield from _block_commands(
                name, lines, opening + 1, closing, console=block.language == "console"
            )
    text = "\n".join(prose)
    for span in re.finditer(r"`([^`]+)`", text):
        if "kubectl" in span[1]:
            line = text.count("\n", 0, span.start()) + 1
            yield Command(f"{name}:{line}", " ".join(span[1].split()))


def _block_commands(
    name: str, lines: list[str], start: int, end: int, *, console: bool
) -> Iterator[Command]:
    """A shell block's commands; in a console block only the `$ ` lines (the rest is what
    they print)."""
    k = start
    while k < end:
        first = k
        text = lines[k]
        if console and not text.startswith("$ "):
            k += 1
            continue
        while text.endswith("\\") and k + 1 < end:
            k += 1
            text = text[:-1] + " " + lines[k]
        heredoc = re.search(r"<<-?\s*'?(\w+)'?", text)
        body: list[str] = []
        if heredoc is not None:
            while k + 1 < end and lines[k + 1].strip() != heredoc[1]:
                k += 1
                body.append(lines[k])
            k += 1  # the terminator
        k += 1
        text = text.strip().removeprefix("$ ")
        if "kubectl" in text:
            yield Command(f"{name}:{first + 1}", text + ("\n" + "\n".join(body) if body else ""))


def words(text: str) -> list[str]:
    """The command's words up to a pipe, a comment or a heredoc; placeholders kept whole."""
    line = text.split("\n", 1)[0]
    line = PLACEHOLDER.sub(lambda m: "<" + m[1].replace(" ", "_") + ">", line)
    try:
        argv = shlex.split(line, comments=True)
    except ValueError:
        argv = line.split()
    cut = next((i for i, w in enumerate(argv) if w in {"|", "&&", ";", "||"} or "<<" in w), None)
    return argv[:cut]


def namespace_of(argv: list[str]) -> str | None:
    for i, word in enumerate(argv):
        if word in {"-n", "--namespace"} and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--namespace="):
            return word.partition("=")[2]
    return None


def _object(kind_word: str, name: str, cluster: Cluster) -> Named | None:
    kind = KINDS.get(kind_word.lower())
    if kind is None:
        return None
    placeholder = PLACEHOLDER.fullmatch(name)
    if placeholder is not None:
        if kind == "Job":
            return cluster.of_kind("CronJob", "Jobs of")
        if kind == "Pod":
            first_word = placeholder[1].split("_")[0]
            return cluster.pods_of_word(first_word)
        return None
    return cluster.by_name(kind, name)


def _kind_name(word: str) -> tuple[str, str]:
    kind, _, name = word.partition("/")
    return kind, name


def named_objects(argv: list[str], cluster: Cluster) -> list[Named]:
    """What the command names among the deployed objects (see the module's docstring)."""
    named: list[Named | None] = []
    skip = False
    positional: list[str] = []
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        value = word.partition("=")[2] if word.startswith("--") and "=" in word else None
        if word in {"-n", "--namespace"}:
            skip = True
        elif word in {"-l", "--selector"} and i + 1 < len(argv):
            named.append(cluster.selected(argv[i + 1]))
            skip = True
        elif word.startswith("--selector="):
            named.append(cluster.selected(word.partition("=")[2]))
        elif value is not None and "/" in value:  # --from=cronjob/xgpu-advisor
            named.append(_object(*_kind_name(value), cluster))
        elif word.startswith("-"):
            continue
        elif re.match(r"^[A-Za-z][A-Za-z.]*/", word):  # KIND/NAME
            named.append(_object(*_kind_name(word), cluster))
        else:
            positional.append(word)
        if PLACEHOLDER.fullmatch(word) and word.endswith("pod>"):
            named.append(_object("pod", word, cluster))  # `logs <exporter pod>`
    # `kubectl VERB KIND NAME` (`get ds xgpu-exporter`, `delete pod xgpu-reports`); `create`
    # names a new object, whose namespace is the command's own.
    if len(positional) >= 4 and positional[1] != "create" and positional[2].lower() in KINDS:
        if not PLACEHOLDER.fullmatch(positional[3]):
            named.append(_object(positional[2], positional[3], cluster))
    # `kubectl get cronjob,jobs`: every object of those kinds (without a selector).
    elif (
        len(positional) == 3
        and positional[1] == "get"
        and not any(w in {"-l", "--selector"} or w.startswith("--selector=") for w in argv)
    ):
        for kind_word in positional[2].split(","):
            kind = KINDS.get(kind_word.lower())
            if kind == "Job":
                named.append(cluster.of_kind("CronJob", "Jobs of"))
            elif kind is not None and kind != "Pod":
                named.append(cluster.of_kind(MANIFEST_KIND.get(kind, kind), "every"))
    # `kubectl cp POD:PATH ...`
    if len(positional) >= 3 and positional[1] == "cp":
        for word in positional[2:]:
            if (pod := re.match(r"^([a-z0-9][a-z0-9.-]*):/", word)) is not None:
                named.append(cluster.by_name("Pod", pod[1]))
    return [n for n in named if n is not None]


def remember_created(command: Command, argv: list[str], cluster: Cluster) -> None:
    """A pod a document creates from a heredoc lives where the claims it mounts live."""
    _, _, body = command.text.partition("\n")
    if not body or ("apply" not in argv and "create" not in argv):
        return
    for document in yaml.safe_load_all(body):
        if not isinstance(document, dict) or document.get("kind") != "Pod":
            continue
        claims = [
            v["persistentVolumeClaim"]["claimName"]
            for v in document["spec"].get("volumes", [])
            if "persistentVolumeClaim" in v
        ]
        homes = [cluster.by_name("PVC", claim) for claim in claims]
        if homes and all(homes):
            found = frozenset().union(*(h.namespaces for h in homes if h))
            cluster.created["Pod", document["metadata"]["name"]] = found


def wrong_namespaces(paths: list[Path], cluster: Cluster) -> tuple[list[str], int]:
    """One line per object a command sends to the wrong namespace, and how many it checked."""
    problems = []
    checked = 0
    for path in paths:
        for command in commands(path):
            argv = words(command.text)
            if "kubectl" not in argv:
                continue
            argv = argv[argv.index("kubectl") :]
            namespace = namespace_of(argv)
            if namespace is None:
                continue
            for named in named_objects(argv, cluster):
                checked += 1
                if namespace not in named.namespaces:
                    homes = ", ".join(sorted(named.namespaces))
                    first = command.text.split("\n", 1)[0]
                    problems.append(
                        f"{command.where}: `{first}`: {named.what} live(s) in {homes}, "
                        f"not {namespace}"
                    )
            remember_created(command, argv, cluster)
    return problems, checked


# --- the tests -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base() -> list[Json]:
    return kustomize(REPO / "deploy" / "base")


@pytest.mark.realservices  # kubectl kustomize
def test_every_kubectl_command_names_its_objects_namespace(base: list[Json]) -> None:
    problems, checked = wrong_namespaces(DOCUMENTS, Cluster(base))
    assert problems == []
    assert checked >= 18  # the runbooks', troubleshooting's and the guide's commands are read


@pytest.mark.realservices  # kubectl kustomize
def test_a_wrong_namespace_is_caught_in_every_form(base: list[Json], tmp_path: Path) -> None:
    """Each way a command names an object, sent to the other namespace."""
    page = tmp_path / "page.md"
    page.write_text(
        "Check `kubectl -n xgpu-insight get ds xgpu-exporter` and the log of\n"
        "`kubectl -n xgpu-insight logs <exporter pod> | grep unhealthy`, or\n"
        "`kubectl -n xgpu-insight get pods -o wide -l\n  app.kubernetes.io/name=xgpu-exporter`.\n"
        "\n```sh\n"
        "kubectl --namespace=xgpu-exporter create job --from=cronjob/xgpu-advisor now\n"
        "kubectl -n xgpu-exporter logs -f job/now\n"
        "kubectl -n xgpu-insight rollout status daemonset/xgpu-exporter   # the exporter\n"
        "kubectl -n xgpu-exporter port-forward \\\n  svc/xgpu-advisor-reports 19401\n"
        "kubectl -n xgpu-exporter apply -f - <<'EOF'\n"
        "kind: Pod\nmetadata: {name: copier}\n"
        "spec: {volumes: [{name: r, persistentVolumeClaim: {claimName: xgpu-advisor-reports}}]}\n"
        "EOF\n"
        "kubectl -n xgpu-exporter delete pod copier\n"
        "kubectl -n xgpu-exporter get pods -l app.kubernetes.io/name=xgpu-advisor\n"
        "kubectl -n xgpu-exporter cp copier:/reports/report.html report.html\n"
        "kubectl -n xgpu-exporter get cronjob,jobs\n"
        "kubectl -n monitoring get pods -l app.kubernetes.io/name=prometheus\n"
        "kubectl get pods -A --field-selector spec.nodeName=gpu-1\n"
        "```\n"
    )
    cluster = Cluster(base)
    problems, checked = wrong_namespaces([page], cluster)
    where = [p.split(": `")[0].removeprefix("page.md:") for p in problems]
    assert [p.rpartition(": ")[2] for p in problems] == [
        "CronJob xgpu-advisor live(s) in xgpu-insight, not xgpu-exporter",
        "Jobs of CronJob xgpu-advisor live(s) in xgpu-insight, not xgpu-exporter",
        "DaemonSet xgpu-exporter live(s) in xgpu-exporter, not xgpu-insight",
        "Service xgpu-advisor-reports live(s) in xgpu-insight, not xgpu-exporter",
        "Pod copier live(s) in xgpu-insight, not xgpu-exporter",
        "objects and pods labelled app.kubernetes.io/name=xgpu-advisor live(s) in "
        "xgpu-insight, not xgpu-exporter",
        "Pod copier live(s) in xgpu-insight, not xgpu-exporter",
        "every CronJob xgpu-advisor live(s) in xgpu-insight, not xgpu-exporter",
        "Jobs of CronJob xgpu-advisor live(s) in xgpu-insight, not xgpu-exporter",
        "DaemonSet xgpu-exporter live(s) in xgpu-exporter, not xgpu-insight",
        "pods of DaemonSet xgpu-exporter live(s) in xgpu-exporter, not xgpu-insight",
        "objects and pods labelled app.kubernetes.io/name=xgpu-exporter live(s) in "
        "xgpu-exporter, not xgpu-insight",
    ]  # the blocks' commands first, then the inline ones
    assert where == ["7", "8", "9", "10", "17", "18", "19", "20", "20", "1", "2", "3"]
    assert checked == len(problems)  # the monitoring and the -A commands name no object here


def test_commands_are_read_from_spans_that_wrap_and_blocks_that_continue(
    tmp_path: Path,
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `kubectl -n a get pods -l\n  x=y` now.\n\n```console\n$ kubectl -n b \\\n"
        "    get ds z\nprinted\n```\n\n```text\nkubectl -n c get ds z\n```\n"
    )
    found = [(c.where.rpartition(":")[2], c.text) for c in commands(page)]
    assert found == [("5", "kubectl -n b      get ds z"), ("1", "kubectl -n a get pods -l x=y")]
