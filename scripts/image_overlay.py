"""Set the image an overlay deploys (README "Deploying to a cluster", `make overlay`).

    python scripts/image_overlay.py REGISTRY/NAME:TAG DIR [--resources BASE]

Writes DIR/kustomization.yaml so that `kubectl apply -k DIR` runs the image pushed by
`make image push IMAGE=REGISTRY/NAME:TAG`:

- where the file does not exist, a new overlay of BASE (default deploy/base; one of
  deploy/overlays/ works too) whose `images:` entry sets that image;
- where it exists, the same Kustomization with that one `images:` entry set (added or
  replaced); its other keys and entries are kept. PyYAML keeps no comments.

The entry names the image as the base renders it (the `newName` of deploy/base's `images:`
entry `xgpu-insight`): kustomize matches an overlay's `images:` against what its
resources render, not against the manifests' own `image:` fields.

Why a script: `kubectl kustomize` has no `edit set image`, and a standalone `kustomize`
is not on every machine that has kubectl.

Bad input (a reference without a tag or digest, a kustomization that is not one): one
line on stderr naming it, exit 2, nothing written.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from advisor.scenario.write import write_atomic

REPO = Path(__file__).resolve().parents[1]
BASE = REPO / "deploy" / "base"
PROJECT_IMAGE = "xgpu-insight"  # the name the manifests' `image:` fields use
# An image reference as docker and podman read it (github.com/distribution/reference):
# an optional registry host (with a port), lower-case path components, then a tag, a
# digest or both. No maintained Python library parses it; the grammar is short.
COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
HOST = rf"(?:{LABEL}(?:\.{LABEL})*(?::\d+)?)"
REFERENCE = re.compile(
    rf"(?P<name>(?:{HOST}/)?{COMPONENT}(?:/{COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)
Json = dict[str, Any]


class OverlayError(ValueError):
    """Bad input, in one line."""


def image_entry(reference: str) -> Json:
    """The kustomize `images:` fields for `reference`: newName, then newTag and/or digest."""
    match = REFERENCE.fullmatch(reference)
    if match is None:
        raise OverlayError(f"IMAGE {reference!r}: not an image reference (REGISTRY/NAME:TAG)")
    if match["tag"] is None and match["digest"] is None:
        raise OverlayError(
            f"IMAGE {reference!r}: no tag or digest; name the version pushed "
            f"(e.g. {match['name']}:0.1.0)"
        )
    if match["tag"] == "latest":
        raise OverlayError(
            f"IMAGE {reference!r}: 'latest' moves with every push; name the version pushed"
        )
    entry: Json = {"newName": match["name"]}
    if match["tag"] is not None:
        entry["newTag"] = match["tag"]
    if match["digest"] is not None:
        entry["digest"] = match["digest"]
    return entry


def rendered_name(base_kustomization: Path) -> str:
    """The project image's name as deploy/base renders it."""
    data = yaml.safe_load(base_kustomization.read_text(encoding="utf-8"))
    for entry in data.get("images") or []:
        if entry.get("name") == PROJECT_IMAGE:
            return str(entry.get("newName", PROJECT_IMAGE))
    return PROJECT_IMAGE


def _read(path: Path) -> Json:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "YAML"
        problem = getattr(error, "problem", None) or "not YAML"
        raise OverlayError(f"{path}: {where}: {problem}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise OverlayError(f"{path}: cannot read it: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise OverlayError(f"{path}: not a Kustomization (a mapping), but a {type(data).__name__}")
    images = data.get("images")
    if images is not None and not (
        isinstance(images, list) and all(isinstance(e, dict) for e in images)
    ):
        raise OverlayError(f"{path}: images: must be a list of mappings")
    return data


def kustomization(path: Path, resources: Path, name: str, entry: Json) -> Json:
    """The overlay's Kustomization with `name` set to `entry` in its `images:`."""
    if path.exists():
        data = _read(path)
    else:
        data = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [os.path.relpath(resources.resolve(), path.parent.resolve())],
        }
    images = [e for e in data.get("images") or [] if e.get("name") != name]
    data["images"] = [{"name": name, **entry}, *images]
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/image_overlay.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("image", help="the image pushed, REGISTRY/NAME:TAG (or @sha256:...)")
    parser.add_argument("overlay", type=Path, help="the overlay's folder (created if missing)")
    parser.add_argument(
        "--resources",
        type=Path,
        default=BASE,
        help="what a new overlay builds on (default deploy/base); kept in an existing one",
    )
    args = parser.parse_args(argv)
    path = args.overlay / "kustomization.yaml"
    try:
        if not (args.resources / "kustomization.yaml").is_file():
            raise OverlayError(f"--resources {args.resources}: no kustomization.yaml there")
        entry = image_entry(args.image)
        name = rendered_name(BASE / "kustomization.yaml")
        data = kustomization(path, args.resources, name, entry)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, yaml.safe_dump(data, sort_keys=False))
    except OverlayError as error:
        print(f"image_overlay: {error}", file=sys.stderr)
        return 2
    print(f"{path}: image {args.image}; deploy it with: kubectl apply -k {args.overlay}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
