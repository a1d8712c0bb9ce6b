"""The real kubectl v1.35 as an admin types it, against a simulator URL (shared by tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tests.kube_tools import kube_tools

DS = "nvidia-device-plugin-daemonset"
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: nvidia-device-plugin-config
  namespace: kube-system
data:
  config.yaml: |
    version: v1
    sharing:
      timeSlicing:
        resources:
          - name: nvidia.com/gpu
            replicas: {replicas}
"""


class Kubectl:
    """`kubectl --server=URL ...` with the real binary; raises on failure unless told not to."""

    def __init__(self, url: str, home: Path) -> None:
        self.url = url
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}

    def __call__(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(kube_tools().kubectl), f"--server={self.url}", *args],
            capture_output=True,
            text=True,
            timeout=90,
            env={**self.env, **(env or {})},
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}")
        return done

    def alloc(self) -> str:
        jsonpath = r"jsonpath={.status.allocatable.nvidia\.com/gpu}"
        return self("get", "node", "gpu-server-1", "-o", jsonpath).stdout


def time_sliced(ds: dict[str, Any]) -> dict[str, Any]:
    """The DaemonSet as the admin edits it: CONFIG_FILE plus the ConfigMap mounted."""
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": DS, "namespace": "kube-system"},
        "spec": ds["spec"],
    }
    spec = manifest["spec"]["template"]["spec"]
    container = spec["containers"][0]
    container["env"].append({"name": "CONFIG_FILE", "value": "/config/config.yaml"})
    container["volumeMounts"].append({"name": "plugin-config", "mountPath": "/config"})
    spec["volumes"].append(
        {"name": "plugin-config", "configMap": {"name": "nvidia-device-plugin-config"}}
    )
    return manifest
