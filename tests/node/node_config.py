"""The configuration files of the real node: containerd, CNI, the kubelet and its identity."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.node.images import PAUSE_IMAGE
from tests.node.machine_state import BRIDGE, CGROUP_ROOT
from tests.node.toolkit import HANDLER
from tests.real.controlplane import ControlPlane, free_port

SUBNET = "10.244.77.0/24"


def node_certificate(plane: ControlPlane, folder: Path, name: str) -> tuple[Path, Path]:
    key, csr, cert = folder / "kubelet.key", folder / "kubelet.csr", folder / "kubelet.crt"
    subject = f"/O=system:nodes/CN=system:node:{name}"
    ca_key = str(plane.folder / "ca.key")
    request = ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr)]
    sign = ["x509", "-req", "-in", str(csr), "-CA", str(plane.ca_file), "-CAkey", ca_key]
    for command in (
        [*request, "-subj", subject],
        [*sign, "-CAcreateserial", "-out", str(cert), "-days", "2"],
    ):
        subprocess.run(["openssl", *command], check=True, capture_output=True, timeout=60)
    return cert, key


def containerd_config(folder: Path, toolkit: Path) -> str:
    """`runc`, `nvidia` (plain runc, as k3s names it) and the mock toolkit's runc wrapper."""
    runc = {
        "runtime_type": "io.containerd.runc.v2",
        "options": {"SystemdCgroup": False},
    }
    mock_toolkit = {
        "runtime_type": "io.containerd.runc.v2",
        "options": {"SystemdCgroup": False, "BinaryName": str(toolkit)},
    }
    config = {
        "version": 2,
        "root": str(folder / "root"),
        "state": str(folder / "state"),
        "grpc": {"address": str(folder / "containerd.sock")},
        "disabled_plugins": [
            "io.containerd.snapshotter.v1.btrfs",
            "io.containerd.snapshotter.v1.zfs",
            "io.containerd.snapshotter.v1.devmapper",
            "io.containerd.snapshotter.v1.aufs",
        ],
        "plugins": {
            "io.containerd.grpc.v1.cri": {
                "sandbox_image": PAUSE_IMAGE,
                "restrict_oom_score_adj": True,
                "enable_selinux": False,
                "containerd": {
                    "snapshotter": "overlayfs",
                    "default_runtime_name": "runc",
                    "runtimes": {"runc": runc, "nvidia": runc, HANDLER: mock_toolkit},
                },
                "cni": {"bin_dir": "/usr/lib/cni", "conf_dir": str(folder / "net.d")},
            },
            "io.containerd.internal.v1.opt": {"path": str(folder / "opt")},
        },
    }
    return _toml(config)


def _toml(table: dict[str, Any], prefix: str = "") -> str:
    """The small TOML subset containerd's config needs (tables, strings, bools, lists)."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    for key, value in table.items():
        if isinstance(value, dict):
            tables.append((f'{prefix}"{key}"' if "." in key else f"{prefix}{key}", value))
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    for name, sub in tables:
        lines.append(f"\n[{name}]")
        lines.append(_toml(sub, f"{name}."))
    return "\n".join(lines)


def cni_config(folder: Path) -> str:
    return json.dumps(
        {
            "cniVersion": "0.4.0",
            "name": "gpu-slots-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    # The bridge is the pods' gateway: kube-proxy's DNAT to Services and
                    # back runs through the host (tests/node/proxy.py).
                    "isGateway": True,
                    "hairpinMode": True,
                    "ipMasq": False,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": SUBNET}]],
                        "routes": [{"dst": "0.0.0.0/0"}],  # through the gateway
                        "dataDir": str(folder / "ipam"),
                    },
                }
            ],
        }
    )


def kubelet_config(plane: ControlPlane, folder: Path, containerd: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{CGROUP_ROOT}",
        "containerRuntimeEndpoint": f"unix://{containerd}",
        "address": "127.0.0.1",
        "port": free_port(),
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": free_port(),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(plane.ca_file)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "failSwapOn": False,
        "makeIPTablesUtilChains": False,
        "resolvConf": "",
        "podLogsDir": str(folder / "pod-logs"),
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "1Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "nodeStatusUpdateFrequency": "2s",
        "syncFrequency": "5s",
        "serializeImagePulls": False,
        "containerLogMaxSize": "1Mi",
    }


def kubelet_kubeconfig(plane: ControlPlane, cert: Path, key: Path) -> str:
    """The kubelet's kubeconfig: the control plane's CA and the node's client certificate."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "real",
                    "cluster": {
                        "server": plane.server,
                        "certificate-authority": str(plane.ca_file),
                    },
                }
            ],
            "users": [
                {
                    "name": "kubelet",
                    "user": {"client-certificate": str(cert), "client-key": str(key)},
                }
            ],
            "contexts": [{"name": "real", "context": {"cluster": "real", "user": "kubelet"}}],
            "current-context": "real",
        }
    )
