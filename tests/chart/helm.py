"""What `helm template` does with a chart, in the small: merge values, check the schema, render.

Used only by the chart tests (no Helm binary is available here). `lookup` returns an empty
map, as it does under `helm template`, so generated secrets are new on each render.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.chart.gotemplate import Renderer, Struct

CHART_DIR = Path(__file__).resolve().parents[2] / "chart"


@dataclass(frozen=True)
class Rendered:
    """The manifests (one dict per YAML document) and NOTES.txt of one render."""

    objects: list[dict[str, Any]]
    notes: str
    values: dict[str, Any]

    def find(self, kind: str, name_suffix: str = "") -> dict[str, Any]:
        found = [
            obj
            for obj in self.objects
            if obj["kind"] == kind and obj["metadata"]["name"].endswith(name_suffix)
        ]
        if len(found) != 1:
            raise LookupError(f"{len(found)} {kind} objects named *{name_suffix}")
        return found[0]

    def kinds(self) -> list[str]:
        return sorted(obj["kind"] for obj in self.objects)


def merge_values(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing: maps merge key by key, anything else replaces, null deletes."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def default_values(chart_dir: Path = CHART_DIR) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((chart_dir / "values.yaml").read_text()) or {}
    return loaded


def values_schema(chart_dir: Path = CHART_DIR) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((chart_dir / "values.schema.json").read_text())
    return schema


def render(
    overrides: dict[str, Any] | None = None,
    *,
    release_name: str = "gpu-slots",
    namespace: str = "gpu-slots",
    chart_dir: Path = CHART_DIR,
    cluster: dict[tuple[str, str, str, str], Any] | None = None,
) -> Rendered:
    """Render every template as `helm template RELEASE chart/ -n NAMESPACE -f overrides` would."""
    chart_meta = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    values = merge_values(default_values(chart_dir), overrides or {})
    jsonschema.validate(values, values_schema(chart_dir))  # Helm refuses such values too

    renderer = Renderer(cluster=cluster)
    base_path = f"{chart_meta['name']}/templates"
    names: list[str] = []
    for path in sorted((chart_dir / "templates").iterdir()):
        name = f"{base_path}/{path.name}"
        renderer.add(name, path.read_text())
        names.append(name)

    def context(template_name: str) -> Struct:
        return Struct(
            Values=values,
            Release=Struct(
                Name=release_name,
                Namespace=namespace,
                Service="Helm",
                IsInstall=True,
                IsUpgrade=False,
                Revision=1,
            ),
            Chart=Struct(
                Name=chart_meta["name"],
                Version=chart_meta["version"],
                AppVersion=chart_meta.get("appVersion", ""),
            ),
            Capabilities=Struct(KubeVersion=Struct(Version="v1.32.0", Major="1", Minor="32")),
            Template=Struct(Name=template_name, BasePath=base_path),
        )

    objects: list[dict[str, Any]] = []
    notes = ""
    for name in names:
        base = name.rsplit("/", 1)[1]
        if base.startswith("_"):
            continue
        text = renderer.render(name, context(name))
        if base == "NOTES.txt":
            notes = text
            continue
        for doc in yaml.safe_load_all(text):
            if doc is not None:
                objects.append(doc)
    return Rendered(objects=objects, notes=notes, values=values)
