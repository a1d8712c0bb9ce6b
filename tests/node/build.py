"""The real node's parts, built once with Go from pinned modules, cached beside the control plane.

- the kubelet and kube-proxy v1.35.4, from `k8s.io/kubernetes` pinned by
  `tests/node/kubelet/go.mod` and `go.sum` (the control plane's pins plus what they add);
- the NVIDIA device plugin v0.19.3, from the Go module proxy: the module is downloaded
  (its sum checked against `PLUGIN_SUM`, and by the go command against its own go.sum),
  copied to a writable folder and `./cmd/nvidia-device-plugin` built there, and from the
  same module `./cmd/config-manager` (the chart's init/sidecar that picks a named config
  by node label);
- our mock `libnvidia-ml.so.1` (`tests/node/mocknvml`, c-shared over go-nvml's mock);
  every other NVML function go-nvml declares gets a weak definition answering
  NVML_ERROR_FUNCTION_NOT_FOUND, generated at build time from go-nvml's `nvml.h`, so the
  library loads with RTLD_NOW (pynvml) as the real one does;
- `pause`, the one program of the test images (`tests/node/images`).

Each lands in `<kube-tools>/<name>-<version>-<sums>/`: a second run builds nothing.
`python -m tests.node.build` builds them all and prints where they are (`make tools`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.kube_tools import CACHE_DIR
from tests.real.build import KUBERNETES_VERSION, ControlPlaneUnavailable, _go, _ldflags

HERE = Path(__file__).resolve().parent
PLUGIN_MODULE = "github.com/NVIDIA/k8s-device-plugin"
PLUGIN_VERSION = "v0.19.3"
PLUGIN_SUM = "h1:NE1ecj9oG/4MQfySHlPVW9EHtq7FqtL06vtydkdnX8E="
GO_NVML = "github.com/NVIDIA/go-nvml"
BUILD_TIMEOUT_S = 30 * 60
_NVML_FUNCTION = re.compile(r"DECLDIR\s+(nvml[A-Za-z0-9_]+)\s*\(")
NVML_ERROR_FUNCTION_NOT_FOUND = 13


class NodeUnavailable(RuntimeError):
    """A part of the real node cannot be built here."""


@dataclass(frozen=True)
class NodeBinaries:
    kubelet: Path
    kube_proxy: Path
    device_plugin: Path
    config_manager: Path
    mock_nvml: Path  # libnvidia-ml.so.1
    pause: Path


def _sums(folder: Path, names: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode())
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:12]


def _go_sources(folder: Path) -> tuple[str, ...]:
    return tuple(
        sorted(
            str(p.relative_to(folder))
            for p in folder.rglob("*")
            if p.is_file() and p.suffix in (".go", ".h", ".mod", ".sum")
        )
    )


def _run(command: list[str], *, cwd: Path, env: dict[str, str], what: str) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise NodeUnavailable(f"{what} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


def _cached(name: str, files: tuple[str, ...], make: Callable[[Path], None]) -> Path:
    """`<cache>/<name>/`, made by `make(folder)` under a lock the first time."""
    final = CACHE_DIR / name
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / f".{name.split('-')[0]}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((final / f).exists() for f in files):
            with tempfile.TemporaryDirectory(dir=CACHE_DIR) as scratch:
                staging = Path(scratch) / "out"
                staging.mkdir()
                started = time.monotonic()
                print(f"building {name} with Go ...", file=sys.stderr, flush=True)
                make(staging)
                print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
                shutil.rmtree(final, ignore_errors=True)
                staging.rename(final)
    return final


def _env(*, cgo: bool) -> dict[str, str]:
    return {
        **os.environ,
        "CGO_ENABLED": "1" if cgo else "0",
        "GOFLAGS": "-mod=readonly -buildvcs=false",
    }


def _kubelet(into: Path) -> None:
    source = HERE / "kubelet"
    command = [_go(), "build", "-trimpath", "-ldflags", _ldflags(), "-o", f"{into}/"]
    _run(
        [*command, "k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy"],
        cwd=source,
        env=_env(cgo=False),
        what="go build kubelet kube-proxy",
    )


def _download(module: str, scratch: Path) -> dict[str, str]:
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    out = _run(
        [_go(), "mod", "download", "-json", module],
        cwd=scratch,
        env=env,
        what=f"go mod download {module}",
    )
    found: dict[str, str] = json.loads(out)
    return found


def _plugin_source(scratch: Path) -> Path:
    """A writable copy of the plugin's module, its sum checked against `PLUGIN_SUM`."""
    found = _download(f"{PLUGIN_MODULE}@{PLUGIN_VERSION}", scratch)
    if found.get("Sum") != PLUGIN_SUM:
        raise NodeUnavailable(f"{PLUGIN_MODULE}@{PLUGIN_VERSION} sum {found.get('Sum')}")
    source = scratch / "k8s-device-plugin"
    shutil.copytree(found["Dir"], source)
    for path in (source, *source.rglob("*")):
        path.chmod(path.stat().st_mode | 0o200)
    return source


def _plugin_command(name: str, into: Path, *, cgo: bool, extldflags: str = "") -> None:
    """`go build ./cmd/<name>` of the pinned plugin module into `into/<name>`."""
    source = _plugin_source(into.parent)
    info = f"{PLUGIN_MODULE}/internal/info"
    ldflags = f"-s -w{extldflags} -X {info}.version={PLUGIN_VERSION}"
    _run(
        [_go(), "build", "-trimpath", "-ldflags", ldflags, "-o", str(into / name), f"./cmd/{name}"],
        cwd=source,
        env=_env(cgo=cgo),
        what=f"go build {name}",
    )


def _device_plugin(into: Path) -> None:
    exported = " '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files'"
    _plugin_command("nvidia-device-plugin", into, cgo=True, extldflags=exported)


def _config_manager(into: Path) -> None:
    """The chart's config-manager (init and sidecar): client-go only, no NVML."""
    _plugin_command("config-manager", into, cgo=False)


def _unavailable_functions(go_nvml_dir: Path, implemented: set[str]) -> str:
    names = sorted(set(_NVML_FUNCTION.findall((go_nvml_dir / "pkg/nvml/nvml.h").read_text())))
    lines = [
        "/* Generated by tests/node/build.py from go-nvml's nvml.h: the NVML functions the",
        "   mock does not serve answer NVML_ERROR_FUNCTION_NOT_FOUND, as an older driver would. */",
    ]
    lines += [
        f"__attribute__((weak)) int {name}(void) {{ return {NVML_ERROR_FUNCTION_NOT_FOUND}; }}"
        for name in names
        if name not in implemented
    ]
    return "\n".join(lines) + "\n"


def _mock_nvml(into: Path) -> None:
    source = into.parent / "mocknvml"
    shutil.copytree(HERE / "mocknvml", source)
    # `go mod download` fetches go-nvml when no other build did and names its folder
    # (`go list -m` names it only when the module is already in the cache).
    module = json.loads(
        _run(
            [_go(), "mod", "download", "-json", GO_NVML],
            cwd=source,
            env=_env(cgo=True),
            what="go mod download go-nvml",
        )
    )
    implemented = set(
        re.findall(
            r"^//export (\w+)$",
            "\n".join(p.read_text() for p in source.glob("*.go")),
            re.MULTILINE,
        )
    )
    (source / "unavailable.c").write_text(_unavailable_functions(Path(module["Dir"]), implemented))
    _run(
        [
            _go(),
            "build",
            "-trimpath",
            "-buildmode=c-shared",
            "-ldflags",
            "-s -w",
            "-o",
            str(into / "libnvidia-ml.so.1"),
            ".",
        ],
        cwd=source,
        env=_env(cgo=True),
        what="go build mock libnvidia-ml.so.1",
    )
    (into / "libnvidia-ml.so.h").unlink(missing_ok=True)


def _pause(into: Path) -> None:
    _run(
        [_go(), "build", "-trimpath", "-ldflags", "-s -w", "-o", str(into / "pause"), "."],
        cwd=HERE / "images",
        env=_env(cgo=False),
        what="go build pause",
    )


@cache
def mock_nvml_library() -> Path:
    """Our `libnvidia-ml.so.1`, built on first use (needs Go and a C compiler, not root)."""
    try:
        _go()
    except ControlPlaneUnavailable as exc:
        raise NodeUnavailable(str(exc)) from exc
    folder = HERE / "mocknvml"
    built = _cached(
        f"mock-nvml-{_sums(folder, _go_sources(folder))}", ("libnvidia-ml.so.1",), _mock_nvml
    )
    return built / "libnvidia-ml.so.1"


@cache
def node_binaries() -> NodeBinaries:
    """The checked binaries, built on first use (then cached beside the control plane's)."""
    try:
        go = _go()
    except ControlPlaneUnavailable as exc:
        raise NodeUnavailable(str(exc)) from exc
    del go
    kubelet = _cached(
        f"kubelet-{KUBERNETES_VERSION}-{_sums(HERE / 'kubelet', ('go.mod', 'go.sum', 'tools.go'))}",
        ("kubelet", "kube-proxy"),
        _kubelet,
    )
    plugin = _cached(
        f"device-plugin-{PLUGIN_VERSION}-{hashlib.sha256(PLUGIN_SUM.encode()).hexdigest()[:12]}",
        ("nvidia-device-plugin",),
        _device_plugin,
    )
    manager = _cached(
        f"config-manager-{PLUGIN_VERSION}-{hashlib.sha256(PLUGIN_SUM.encode()).hexdigest()[:12]}",
        ("config-manager",),
        _config_manager,
    )
    mock = mock_nvml_library().parent
    images = HERE / "images"
    pause = _cached(f"node-pause-{_sums(images, _go_sources(images))}", ("pause",), _pause)
    binaries = NodeBinaries(
        kubelet=kubelet / "kubelet",
        kube_proxy=kubelet / "kube-proxy",
        device_plugin=plugin / "nvidia-device-plugin",
        config_manager=manager / "config-manager",
        mock_nvml=mock / "libnvidia-ml.so.1",
        pause=pause / "pause",
    )
    _check(binaries)
    return binaries


def _check(binaries: NodeBinaries) -> None:
    done = subprocess.run(
        [str(binaries.kubelet), "--version"], capture_output=True, text=True, timeout=60
    )
    if f"Kubernetes {KUBERNETES_VERSION}" not in done.stdout:
        raise NodeUnavailable(f"kubelet is not {KUBERNETES_VERSION}: {done.stdout!r}")
    done = subprocess.run(
        [str(binaries.device_plugin), "--version"], capture_output=True, text=True, timeout=60
    )
    if PLUGIN_VERSION not in done.stdout + done.stderr:
        raise NodeUnavailable(f"nvidia-device-plugin --version said {done.stdout!r}")


if __name__ == "__main__":
    try:
        found = node_binaries()
    except NodeUnavailable as exc:
        print(f"real-node tier: {exc}", file=sys.stderr)
        sys.exit(2)
    for path in (
        found.kubelet,
        found.kube_proxy,
        found.device_plugin,
        found.config_manager,
        found.mock_nvml,
        found.pause,
    ):
        print(f"{path.name} ({path.stat().st_size // 2**20} MiB): {path}")
