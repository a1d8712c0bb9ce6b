"""k3s for the tests, built once with Go from its pinned module and cached beside the node's parts.

The module `github.com/k3s-io/k3s` at `K3S_PSEUDO_VERSION` (the commit of v1.35.1+k3s1) is
downloaded from the Go module proxy, its sum checked against `K3S_SUM` (its own go.mod
and go.sum then pin every dependency, the `k8s.io/kubernetes => github.com/k3s-io/kubernetes`
replacements included: the go command refuses a module whose sum differs), copied to a
writable folder and `./cmd/server` built there with k3s's own build tags. k3s refuses to
start unless `pkg/version.UpstreamGolang` names the Go that built it, so the machine's Go
version is part of the cache key. k3s's containerd, kubelet, kube-proxy, API server,
controllers and helm-controller are in the one binary; runc, the containerd shim and the
CNI plugins are Debian's (`make node-runtime`), as on a distribution that packages k3s.

`python -m tests.k3s.build` builds it and prints where it is (used by `make tools`).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from functools import cache
from pathlib import Path

from tests.node.build import NodeUnavailable, _cached, _download, _env, _run
from tests.real.build import ControlPlaneUnavailable, _go

K3S_MODULE = "github.com/k3s-io/k3s"
K3S_PSEUDO_VERSION = "v1.35.1-0.20260211145931-c5b158798933"
K3S_SUM = "h1:UN67bsRiANznNwJAbhU6K3WxePAj/Dn+ttG15Z5GUZg="
K3S_VERSION = "v1.35.1+k3s1"
# k3s's scripts/build tags for a Linux build without its bundled cri-dockerd.
TAGS = (
    "ctrd netcgo osusergo providerless urfave_cli_no_docs sqlite_omit_load_extension no_cri_dockerd"
)


def _go_version() -> str:
    return _run(
        [_go(), "env", "GOVERSION"], cwd=Path.cwd(), env=_env(cgo=True), what="go env"
    ).strip()


def _ldflags() -> str:
    flags = [
        "-s",
        "-w",
        f"-X {K3S_MODULE}/pkg/version.Version={K3S_VERSION}",
        f"-X {K3S_MODULE}/pkg/version.UpstreamGolang={_go_version()}",
        f"-X k8s.io/client-go/pkg/version.gitVersion={K3S_VERSION}",
        f"-X k8s.io/component-base/version.gitVersion={K3S_VERSION}",
    ]
    return " ".join(flags)


def _k3s(into: Path) -> None:
    found = _download(f"{K3S_MODULE}@{K3S_PSEUDO_VERSION}", into.parent)
    if found.get("Sum") != K3S_SUM:
        raise NodeUnavailable(f"{K3S_MODULE}@{K3S_PSEUDO_VERSION} sum {found.get('Sum')}")
    source = into.parent / "k3s-source"
    subprocess.run(["cp", "-r", found["Dir"], str(source)], check=True, timeout=300)
    subprocess.run(["chmod", "-R", "u+w", str(source)], check=True, timeout=300)
    # As k3s's scripts/build does: its manifests (RuntimeClasses, RBAC, ...) embedded.
    for manifest in (source / "manifests").iterdir():
        subprocess.run(
            ["cp", "-r", str(manifest), str(source / "pkg" / "deploy" / "embed")],
            check=True,
            timeout=60,
        )
    _run(
        [
            _go(),
            "build",
            "-trimpath",
            "-tags",
            TAGS,
            "-ldflags",
            _ldflags(),
            "-o",
            str(into / "k3s"),
            "./cmd/server",
        ],
        cwd=source,
        env=_env(cgo=True),
        what="go build k3s",
    )


@cache
def k3s_binary() -> Path:
    """The checked k3s binary, built on first use (about 7 minutes on 2 cores, then cached)."""
    try:
        _go()
    except ControlPlaneUnavailable as exc:
        raise NodeUnavailable(str(exc)) from exc
    inputs = f"{K3S_SUM} {TAGS} {_go_version()} manifests embedded"
    key = hashlib.sha256(inputs.encode()).hexdigest()[:12]
    binary = _cached(f"k3s-{K3S_VERSION.replace('+', '-')}-{key}", ("k3s",), _k3s) / "k3s"
    done = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    if f"k3s version {K3S_VERSION}" not in done.stdout:
        raise NodeUnavailable(f"k3s --version said {done.stdout!r} {done.stderr[-400:]!r}")
    return binary


if __name__ == "__main__":
    try:
        path = k3s_binary()
    except NodeUnavailable as exc:
        print(f"k3s tier: {exc}", file=sys.stderr)
        sys.exit(2)
    print(f"k3s {K3S_VERSION} ({path.stat().st_size // 2**20} MiB): {path}")
