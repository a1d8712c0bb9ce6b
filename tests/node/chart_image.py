"""Our image, built offline, and the chart installed from it on the real node.

`build_image()` runs `scripts/build-image-offline.sh image` (the Dockerfile through
`podman build --isolation chroot --network none` over the cached Debian-made base and
wheelhouse that `make tools` prepares); the docker-archive it writes is imported into the
node's containerd. `install()` installs the chart with the real helm as a second release
(its own namespace) whose dashboard and agent run as pods from that image: the agent with
RuntimeClass `nvidia-mock-toolkit` (the mock NVML mounted in as the NVIDIA toolkit mounts
the driver's), the dashboard reaching the API server through its in-cluster ClusterIP
(kube-proxy). The node has no cluster DNS, so the Service gets a ClusterIP chosen here (the
chart's `service.clusterIP`, in the static band of the control plane's 10.96.0.0/16) and the
agent that address as its URL: one install, no rollout after it (an upgrade that rolled the
dashboard once left kube-proxy routing to the replaced pod for a moment: a connect timeout).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.node.toolkit import HANDLER, MOCK_RUNTIME_CLASS
from tests.real.controlplane import ControlPlane
from tests.real.world import ADMIN_TOKEN, AUDIENCE, CHART, ROOT, helm

SCRIPT = ROOT / "scripts" / "build-image-offline.sh"
IMAGE_RELEASE = "slots-image"
IMAGE_NAMESPACE = "gpu-slots-image"
DASHBOARD_IP = "10.96.0.80"
DASHBOARD_URL = f"http://{DASHBOARD_IP}:8000"
BUILD_TIMEOUT_S = 900


def image_requirements() -> str | None:
    """Why the offline image cannot be built here, or None."""
    if os.geteuid() != 0:
        return "the offline image build (podman --isolation chroot) needs root"
    for tool in ("podman", "debootstrap", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} not found: the offline image build needs it (`make image-tools`)"
    return None


def _version() -> str:
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise AssertionError("no version in pyproject.toml")


IMAGE = f"localhost/gpu-slots:{_version()}"


def build_image(target: Path) -> Path:
    """The image as a docker-archive tar at `target`, built in a network namespace of its own
    (loopback only): the base and the wheelhouse must be cached, nothing is downloaded."""
    done = subprocess.run(
        ["unshare", "--net", "sh", str(SCRIPT), "image", str(target)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
        env={**os.environ, "IMAGE": IMAGE},
    )
    if done.returncode != 0:
        raise RuntimeError(f"offline image build failed:\n{done.stdout}\n{done.stderr[-4000:]}")
    return target


def _values() -> dict[str, Any]:
    registry, repository = IMAGE.split(":")[0].split("/", 1)
    return {
        "image": {
            "registry": registry,
            "repository": repository,
            "tag": IMAGE.split(":")[1],
            "pullPolicy": "Never",
        },
        "auth": {"adminToken": ADMIN_TOKEN, "agentTokenAudience": AUDIENCE},
        "plugin": {"configNamespaces": ["kube-system"]},
        "agent": {
            "runtimeClassName": MOCK_RUNTIME_CLASS,
            "interval": "2s",
            "dashboardUrl": DASHBOARD_URL,
        },
        "service": {"clusterIP": DASHBOARD_IP},
    }


def install(plane: ControlPlane) -> None:
    """The chart from our image (helm install, or upgrade once the release exists)."""
    path = plane.folder / "image-values.yaml"
    path.write_text(yaml.safe_dump(_values()))
    with plane.http() as http:
        found = http.get(f"/apis/node.k8s.io/v1/runtimeclasses/{MOCK_RUNTIME_CLASS}")
        if found.status_code == 404:
            http.post(
                "/apis/node.k8s.io/v1/runtimeclasses",
                json={
                    "apiVersion": "node.k8s.io/v1",
                    "kind": "RuntimeClass",
                    "metadata": {"name": MOCK_RUNTIME_CLASS},
                    "handler": HANDLER,
                },
            ).raise_for_status()
    helm(
        plane,
        "upgrade",
        "--install",
        IMAGE_RELEASE,
        str(CHART),
        "--namespace",
        IMAGE_NAMESPACE,
        "--create-namespace",
        "-f",
        str(path),
    )


def uninstall(plane: ControlPlane) -> None:
    helm(plane, "uninstall", IMAGE_RELEASE, "--namespace", IMAGE_NAMESPACE)
