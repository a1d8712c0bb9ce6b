"""The real Kubernetes control plane for the tests, built once from its Go modules and cached.

kube-apiserver, kube-scheduler and kube-controller-manager come from `k8s.io/kubernetes`
v1.35.4 (its staging modules replaced by the matching v0.35.4 releases) and etcd from
`go.etcd.io/etcd/server/v3` at the version that Kubernetes release is built against; all
pinned, with their sums, by `tests/real/controlplane/go.mod` and `go.sum` (the go command
refuses a module whose sum differs). They are built with the machine's Go into
`.venv/kube-tools/control-plane-<version>-<sums>/`, so later runs build nothing; the Go
build cache makes a rebuild after a clean clone fast too. `python -m tests.real.build`
builds them and prints where they are (used by `make tools`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.kube_tools import CACHE_DIR

KUBERNETES_VERSION = "v1.35.4"
MIN_GO = (1, 25)
SOURCE = Path(__file__).resolve().parent / "controlplane"
PACKAGES = (
    "./etcd",
    "k8s.io/kubernetes/cmd/kube-apiserver",
    "k8s.io/kubernetes/cmd/kube-scheduler",
    "k8s.io/kubernetes/cmd/kube-controller-manager",
)
BUILD_TIMEOUT_S = 45 * 60


class ControlPlaneUnavailable(RuntimeError):
    """The control plane cannot be built here (no Go, or the build failed)."""


@dataclass(frozen=True)
class ControlPlaneBinaries:
    etcd: Path
    apiserver: Path
    scheduler: Path
    controller_manager: Path


def _sums_id() -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "tools.go", "etcd/main.go"):
        digest.update((SOURCE / name).read_bytes())
    return digest.hexdigest()[:12]


def _binaries(folder: Path) -> ControlPlaneBinaries:
    return ControlPlaneBinaries(
        etcd=folder / "etcd",
        apiserver=folder / "kube-apiserver",
        scheduler=folder / "kube-scheduler",
        controller_manager=folder / "kube-controller-manager",
    )


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise ControlPlaneUnavailable(
            "the real-Kubernetes tier needs Go >= 1.25 on PATH to build kube-apiserver "
            f"{KUBERNETES_VERSION} (none found)"
        )
    done = subprocess.run([go, "version"], capture_output=True, text=True, check=False)
    found = re.search(r"go(\d+)\.(\d+)", done.stdout)
    if found is None or (int(found[1]), int(found[2])) < MIN_GO:
        raise ControlPlaneUnavailable(f"needs Go >= 1.25, found: {done.stdout.strip()!r}")
    return go


def _ldflags() -> str:
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    pkg = "k8s.io/component-base/version"
    return " ".join(
        [
            "-s",
            "-w",
            f"-X {pkg}.gitVersion={KUBERNETES_VERSION}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
        ]
    )


def _build(into: Path) -> None:
    go = _go()
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    command = [go, "build", "-trimpath", "-ldflags", _ldflags(), "-o", f"{into}/", *PACKAGES]
    started = time.monotonic()
    print(
        f"building kube-apiserver/scheduler/controller-manager {KUBERNETES_VERSION} and etcd "
        "with Go (about 7 minutes on 2 cores the first time) ...",
        file=sys.stderr,
        flush=True,
    )
    done = subprocess.run(
        command,
        cwd=SOURCE,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise ControlPlaneUnavailable(
            f"go build failed ({done.returncode}):\n{done.stderr[-4000:]}"
        )
    print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


def _check(binaries: ControlPlaneBinaries) -> None:
    for path in (binaries.apiserver, binaries.scheduler, binaries.controller_manager):
        done = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
        if f"Kubernetes {KUBERNETES_VERSION}" not in done.stdout:
            raise ControlPlaneUnavailable(
                f"{path.name} is not {KUBERNETES_VERSION}: {done.stdout!r}"
            )
    done = subprocess.run(
        [str(binaries.etcd), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    if "etcd Version: 3." not in done.stdout:
        raise ControlPlaneUnavailable(f"etcd --version said {done.stdout!r}")


@cache
def control_plane_binaries() -> ControlPlaneBinaries:
    """The checked binaries, built on first use (then cached under .venv/kube-tools/)."""
    final = CACHE_DIR / f"control-plane-{KUBERNETES_VERSION}-{_sums_id()}"
    binaries = _binaries(final)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / ".control-plane.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not final.is_dir():
            with tempfile.TemporaryDirectory(dir=CACHE_DIR) as scratch:
                staging = Path(scratch) / "bin"
                _build(staging)
                _check(_binaries(staging))
                staging.rename(final)
    _check(binaries)
    return binaries


if __name__ == "__main__":
    try:
        found = control_plane_binaries()
    except ControlPlaneUnavailable as exc:
        print(f"real-Kubernetes tier: {exc}", file=sys.stderr)
        sys.exit(2)
    size = sum(p.stat().st_size for p in found.apiserver.parent.iterdir()) // 2**20
    print(
        f"Kubernetes {KUBERNETES_VERSION} control plane and etcd ({size} MiB): "
        f"{found.apiserver.parent}"
    )
