"""The JSON Schemas of the advisor's outputs, written from the TypedDicts in advisor.schemas.

    python scripts/write_schemas.py          # rewrite advisor/schemas/json/*.schema.json
    python scripts/write_schemas.py --check  # exit 1 and name the stale ones (tests, CI)

The TypedDicts are the one definition of each output's keys: mypy holds the producers and
the renderers to them, and these files (shipped in the package, for tools that read the
advisor's JSON) hold the output itself to them. pydantic writes the schema (a test
dependency, not the product's); the TypedDicts are closed, so every object gets
`additionalProperties: false`, and each output's `schema` field its one value.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from advisor import schemas

OUT = Path(__file__).resolve().parent.parent / "advisor" / "schemas" / "json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# schema id -> the TypedDict of that output (whatif has two forms: one profile, or several
# side by side with --scheduler a,b)
OUTPUTS: dict[str, Any] = {
    schemas.DIAGNOSIS_SCHEMA: schemas.DiagnosisJson,
    schemas.PLAN_SCHEMA: schemas.PlanJson,
    schemas.REPLAY_SCHEMA: schemas.ReplayJson,
    schemas.REPORT_SCHEMA: schemas.ReportJson,
    schemas.RIGHTSIZING_SCHEMA: schemas.RightsizingJson,
    schemas.WHATIF_SCHEMA: schemas.WhatIfJson | schemas.SchedulersJson,
}


def file_name(schema_id: str) -> str:
    """ "xgpu-advisor/plan/v1" -> "plan-v1.schema.json"."""
    _, what, version = schema_id.split("/")
    return f"{what}-{version}.schema.json"


def _closed(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            node["additionalProperties"] = False
        for value in node.values():
            _closed(value)
    elif isinstance(node, list):
        for value in node:
            _closed(value)


def _pin(node: Any, schema_id: str) -> None:
    """Each form's `schema` field holds the one id."""
    forms = node.get("anyOf", [node])
    for form in forms:
        target = node["$defs"][form["$ref"].rsplit("/", 1)[1]] if "$ref" in form else form
        if "schema" in target.get("properties", {}):
            target["properties"]["schema"] = {"const": schema_id, "type": "string"}


def schema_of(schema_id: str, shape: Any) -> dict[str, Any]:
    body: dict[str, Any] = TypeAdapter(shape).json_schema()
    _closed(body)
    _pin(body, schema_id)
    return {"$schema": DIALECT, "$id": schema_id, **body}


def rendered() -> dict[str, str]:
    """File name -> text, for every output."""
    return {
        file_name(schema_id): json.dumps(schema_of(schema_id, shape), indent=1) + "\n"
        for schema_id, shape in OUTPUTS.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="write_schemas.py", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a file is stale")
    args = parser.parse_args(argv)
    texts = rendered()
    stale = [name for name, text in texts.items() if _read(OUT / name) != text]
    extra = sorted(p.name for p in OUT.glob("*.schema.json") if p.name not in texts)
    if args.check:
        for name in [*stale, *extra]:
            print(f"stale: advisor/schemas/json/{name} (python scripts/write_schemas.py)")
        return 1 if stale or extra else 0
    OUT.mkdir(exist_ok=True)
    for name in stale:
        (OUT / name).write_text(texts[name], encoding="utf-8")
        print(f"wrote advisor/schemas/json/{name}")
    for name in extra:
        (OUT / name).unlink()
        print(f"removed advisor/schemas/json/{name}")
    return 0


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


if __name__ == "__main__":
    sys.exit(main())
