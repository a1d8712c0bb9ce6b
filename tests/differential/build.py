"""The differential tier's two oracles, built once with Go from pinned modules and cached.

- `plugin-oracle` (tests/differential/plugin_oracle): NVIDIA's k8s-device-plugin
  `api/config/v1` at v0.19.3 (the newest release the Go module proxy serves), pinned with
  its sums by that folder's go.mod/go.sum.
- `kube-oracle` (tests/real/controlplane/kubeoracle): k8s.io/kubernetes v1.35.4's pod
  defaulting, conversion and ValidatePodCreate, component-helpers' PodRequests and
  apimachinery's Quantity, built in the control-plane module so it shares that tier's pins
  and, through the Go build cache, its compiled packages (a few seconds once the control
  plane is built).

Both land in `.venv/kube-tools/differential-<sums>/` (GPU_SLOTS_KUBE_TOOLS_DIR), keyed by
the hash of every file that goes into them; `python -m tests.differential.build` builds them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.kube_tools import CACHE_DIR
from tests.real.build import SOURCE as CONTROL_PLANE_SOURCE
from tests.real.build import ControlPlaneUnavailable, _go

PLUGIN_SOURCE = Path(__file__).resolve().parent / "plugin_oracle"
PLUGIN_VERSION = "v0.19.3"
KUBERNETES_VERSION = "v1.35.4"
BUILD_TIMEOUT_S = 30 * 60


class OracleUnavailable(RuntimeError):
    """An oracle cannot be built here (no Go, or the build failed)."""


@dataclass(frozen=True)
class Oracles:
    plugin: Path
    kube: Path

    def ask_plugin(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _ask(self.plugin, requests)

    def ask_kube(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _ask(self.kube, requests)


def _ask(binary: Path, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(binary)],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": os.environ.get("PATH", "")},
    )
    if done.returncode != 0:
        raise OracleUnavailable(f"{binary.name} failed ({done.returncode}): {done.stderr[-2000:]}")
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    return answers


def _sums_id() -> str:
    digest = hashlib.sha256()
    for path in (
        PLUGIN_SOURCE / "go.mod",
        PLUGIN_SOURCE / "go.sum",
        PLUGIN_SOURCE / "main.go",
        CONTROL_PLANE_SOURCE / "go.mod",
        CONTROL_PLANE_SOURCE / "go.sum",
        CONTROL_PLANE_SOURCE / "kubeoracle" / "main.go",
    ):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _build(go: str, source: Path, package: str, into: Path) -> None:
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    done = subprocess.run(
        [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(into), package],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise OracleUnavailable(f"go build {package} failed:\n{done.stderr[-4000:]}")


@cache
def oracles() -> Oracles:
    """Both oracles, built on first use (then cached under .venv/kube-tools/)."""
    try:
        go = _go()
    except ControlPlaneUnavailable as exc:
        raise OracleUnavailable(str(exc)) from exc
    final = CACHE_DIR / f"differential-{PLUGIN_VERSION}-{KUBERNETES_VERSION}-{_sums_id()}"
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / ".differential.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not final.is_dir():
            with tempfile.TemporaryDirectory(dir=CACHE_DIR) as scratch:
                staging = Path(scratch) / "bin"
                staging.mkdir()
                print("building the differential oracles with Go ...", file=sys.stderr)
                _build(go, PLUGIN_SOURCE, ".", staging / "plugin-oracle")
                _build(go, CONTROL_PLANE_SOURCE, "./kubeoracle", staging / "kube-oracle")
                staging.rename(final)
    return Oracles(plugin=final / "plugin-oracle", kube=final / "kube-oracle")


if __name__ == "__main__":
    try:
        found = oracles()
    except OracleUnavailable as exc:
        print(f"differential tier: {exc}", file=sys.stderr)
        sys.exit(2)
    print(
        f"device plugin {PLUGIN_VERSION} and Kubernetes {KUBERNETES_VERSION} oracles: "
        f"{found.plugin.parent}"
    )
