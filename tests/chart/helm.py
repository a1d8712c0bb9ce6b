"""The chart rendered by the real Helm binary (`helm template`, `helm install --dry-run`).

Helm comes from `tests/kube_tools.py` (pinned, checksummed, cached). Overrides are passed
as a values file, exactly as `-f my-values.yaml` in docs/INSTALL.md; the merged values
the tests reason about are read back from Helm itself (`helm template --show-only` cannot
print them, so they are coalesced here the way Helm does and checked against the schema
by Helm on every render).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.kube_tools import kube_tools

CHART_DIR = Path(__file__).resolve().parents[2] / "chart"


class HelmError(RuntimeError):
    """Helm refused the chart or the values; the message is Helm's own."""


@dataclass(frozen=True)
class Rendered:
    """The manifests (one dict per YAML document) of one render, and the values used."""

    objects: list[dict[str, Any]]
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


def helm(*args: str, extra_env: dict[str, str] | None = None) -> str:
    """Run Helm with a throw-away home (no repositories, no cache, no kubeconfig)."""
    with tempfile.TemporaryDirectory(prefix="helm-home-") as home:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "HELM_CACHE_HOME": f"{home}/cache",
            "HELM_CONFIG_HOME": f"{home}/config",
            "HELM_DATA_HOME": f"{home}/data",
            "KUBECONFIG": f"{home}/kubeconfig",
            **(extra_env or {}),
        }
        done = subprocess.run(
            [str(kube_tools().helm), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    if done.returncode != 0:
        raise HelmError(done.stderr.strip() or done.stdout.strip())
    return done.stdout


def _values_file(overrides: dict[str, Any] | None, directory: str) -> str:
    path = Path(directory) / "values.yaml"
    path.write_text(yaml.safe_dump(overrides or {}))
    return str(path)


def render(
    overrides: dict[str, Any] | None = None,
    *,
    release_name: str = "gpu-slots",
    namespace: str = "gpu-slots",
    chart_dir: Path = CHART_DIR,
    server: str | None = None,
) -> Rendered:
    """`helm template RELEASE chart/ -n NAMESPACE -f overrides`.

    With `server` (an API server URL) Helm renders with `--dry-run=server`, so `lookup`
    reads that cluster, as on `helm upgrade`.
    """
    with tempfile.TemporaryDirectory(prefix="helm-values-") as directory:
        args = [
            "template",
            release_name,
            str(chart_dir),
            "--namespace",
            namespace,
            "-f",
            _values_file(overrides, directory),
        ]
        if server is not None:
            args += ["--dry-run=server", "--kube-apiserver", server]
        text = helm(*args)
    objects = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    values = merge_values(default_values(chart_dir), overrides or {})
    return Rendered(objects=objects, values=values)


def notes(
    overrides: dict[str, Any] | None = None,
    *,
    release_name: str = "gpu-slots",
    namespace: str = "gpu-slots",
) -> str:
    """NOTES.txt as `helm install` prints it (client-side dry run, no cluster)."""
    with tempfile.TemporaryDirectory(prefix="helm-values-") as directory:
        out = helm(
            "install",
            release_name,
            str(CHART_DIR),
            "--namespace",
            namespace,
            "--dry-run=client",
            "-o",
            "json",
            "-f",
            _values_file(overrides, directory),
        )
    text: str = json.loads(out)["info"]["notes"]
    return text


def lint(overrides: dict[str, Any] | None = None) -> str:
    """`helm lint --strict chart/ -f overrides`; raises HelmError on any finding."""
    with tempfile.TemporaryDirectory(prefix="helm-values-") as directory:
        return helm("lint", "--strict", str(CHART_DIR), "-f", _values_file(overrides, directory))
