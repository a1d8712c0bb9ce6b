"""A real single-node k3s v1.35.1+k3s1 on this machine, air-gapped, with a GPU node's runtime.

`start_k3s` runs `k3s server` (built by tests/k3s/build.py) with its data folder under the
test's folder, as an air-gapped user runs it:
- the images it needs are docker-archive tars dropped into `<data>/agent/images/` before it
  starts (k3s imports them into its containerd); `--pause-image` names our `pause`;
- no CoreDNS, Traefik, ServiceLB, metrics-server or local-path (their images are not here;
  the chart is given the dashboard Service's fixed ClusterIP, see docs/INSTALL.md);
- no flannel (its CNI plugin is not Debian's): a bridge network from Debian's
  containernetworking-plugins, set through k3s's `config.toml.tmpl` for its containerd;
  k3s's own kube-proxy carries pods to the `kubernetes` Service's ClusterIP;
- the NVIDIA container toolkit's runtime is on PATH as `nvidia-container-runtime` (our
  runc wrapper mounting the mock NVML, tests/node/toolkit.py), so k3s itself adds the
  `nvidia` runtime to its containerd, as it does on a GPU node;
- the kubelet with cgroupfs under `/gpu-slots-node` (this machine's cgroup v1), its root
  `/var/lib/kubelet` (where the plugin's DaemonSet and our agent look), and a static admin
  token for the tests.

`K3sNode.stop()` deletes the workloads, kills what containerd still runs, stops k3s, then
puts the machine back (mounts, network namespaces, the bridge, cgroups, sysctls, the
`KUBE-` chains kube-proxy and the kubelet wrote, the folders k3s made); `leftovers()`
lists what is still there. It holds the real node's lock: one node on the machine at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.node.machine_state import (
    CGROUP_ROOT,
    MachineState,
    NodeSkipped,
    hierarchies,
    missing_requirements,
)
from tests.node.node import LOCK, RealNode
from tests.node.node_config import cni_config
from tests.node.toolkit import write_runtime
from tests.real.controlplane import ControlPlane, Identity, free_port

K3S_SOCKET = Path("/run/k3s/containerd/containerd.sock")
CLUSTER_CIDR = "10.244.0.0/16"  # holds the bridge's 10.244.77.0/24 (tests/node/node_config.py)
SERVICE_CIDR = "10.43.0.0/16"
DISABLED = "traefik,servicelb,metrics-server,local-storage,coredns"
START_TIMEOUT_S = 240.0
# The kubelet as on the real-node tier: cgroupfs on cgroup v1, status every 2 s, and no
# image garbage collection or disk eviction (an air-gapped node cannot pull an image back).
KUBELET_ARGS = (
    "fail-cgroupv1=false",
    "cgroup-driver=cgroupfs",
    f"cgroup-root=/{CGROUP_ROOT}",
    "node-status-update-frequency=2s",
    "sync-frequency=5s",
    "image-gc-high-threshold=100",
    "image-gc-low-threshold=99",
    "eviction-hard=memory.available<1Mi,nodefs.available<1%,imagefs.available<1%",
)

CONTAINERD_TEMPLATE = """{{{{ template "base" . }}}}

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ["/usr/lib/cni"]
  conf_dir = "{conf_dir}"
"""


@dataclass
class K3sNode(RealNode):
    """The k3s server and agent in one process; its containerd at /run/k3s/containerd."""

    @property
    def containerd_socket(self) -> Path:
        return K3S_SOCKET

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def manifests(self) -> Path:
        """k3s's auto-deploying manifests folder (`server/manifests/`)."""
        return self.data_dir / "server" / "manifests"

    def _delete_workloads(self) -> None:
        """Deployments and Jobs (the chart's, helm-controller's), then DaemonSets and pods."""
        with self.plane.http() as http:
            for group, kind in (("apps/v1", "deployments"), ("batch/v1", "jobs")):
                for item in http.get(f"/apis/{group}/{kind}").json().get("items") or []:
                    meta = item["metadata"]
                    http.delete(
                        f"/apis/{group}/namespaces/{meta['namespace']}/{kind}/{meta['name']}",
                        params={"propagationPolicy": "Background"},
                    )
        super()._delete_workloads()

    def stop(self) -> None:
        try:
            process = self.processes.get("k3s")
            if process is not None and process.poll() is None and self.plane.ca_file.exists():
                try:
                    self._delete_workloads()
                    deadline = time.monotonic() + 60
                    while self._tasks() and time.monotonic() < deadline:
                        time.sleep(0.5)
                except (httpx.HTTPError, RuntimeError, subprocess.TimeoutExpired):
                    pass  # what is left is killed below
                for task in self._tasks():
                    self._ctr_quietly("tasks", "kill", "-s", "SIGKILL", task)
                deadline = time.monotonic() + 30
                while self._tasks() and time.monotonic() < deadline:
                    time.sleep(0.5)
                for task in self._tasks():
                    self._ctr_quietly("tasks", "delete", "-f", task)
            self._stop_process("k3s")
            _kill_shims()
        finally:
            for log in self.logs:
                log.close()
            self._sweep()
            self.lock.close()

    def leftovers(self) -> list[str]:
        found = super().leftovers()
        found += [f"process {pid} (containerd shim)" for pid in _shims()]
        return found


def _shims() -> list[int]:
    """The PIDs of containerd shims serving k3s's containerd (they outlive it by design)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            command
            and command[0].endswith(b"containerd-shim-runc-v2")
            and str(K3S_SOCKET).encode() in command
        ):
            found.append(int(entry.name))
    return found


def _kill_shims() -> None:
    """Each leftover shim and its containers (the shim's children) killed, by PID."""
    for pid in _shims():
        children = Path(f"/proc/{pid}/task/{pid}/children")
        kids = children.read_text().split() if children.exists() else []
        for kid in [*kids, str(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(kid), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _shims() and time.monotonic() < deadline:
        time.sleep(0.2)


def _node_ready(plane: ControlPlane, name: str) -> bool:
    if not plane.ca_file.exists():  # k3s writes its CA once it starts
        return False
    try:
        with plane.http() as http:
            answer = http.get(f"/api/v1/nodes/{name}")
    except httpx.HTTPError:
        return False
    if answer.status_code != 200:
        return False
    conditions = answer.json()["status"].get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _toolkit_path(folder: Path, mock_nvml: Path, machine_file: str) -> Path:
    """A folder holding `nvidia-container-runtime` (the mock toolkit), for k3s's PATH."""
    wrapper = write_runtime(folder, library=mock_nvml, machine_file=machine_file)
    bin_dir = folder / "toolkit-bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-container-runtime").symlink_to(wrapper)
    return bin_dir


def _k3s_path(folder: Path, k3s: Path, toolkit: Path) -> str:
    """k3s's PATH: its own containerd (the k3s binary, as k3s's install links it), the
    toolkit, then the machine's (Debian's runc and containerd shim)."""
    bin_dir = folder / "k3s-bin"
    bin_dir.mkdir()
    (bin_dir / "containerd").symlink_to(k3s)
    return f"{bin_dir}:{toolkit}:{os.environ.get('PATH', '/usr/bin:/bin')}"


def start_k3s(
    k3s: Path,
    folder: Path,
    *,
    name: str,
    labels: dict[str, str],
    images: list[Path],
    mock_nvml: Path,
    machine_file: str,
    pause_image: str,
    helm_job_image: str,
) -> K3sNode:
    """k3s started air-gapped (images preloaded from `agent/images/`); waits for Node Ready."""
    reason = missing_requirements()
    if reason:
        raise NodeSkipped(reason)
    folder.mkdir(parents=True, exist_ok=True)
    lock = open(LOCK, "w")  # noqa: SIM115 - closed by K3sNode.stop
    fcntl.flock(lock, fcntl.LOCK_EX)
    port = free_port()
    token = secrets.token_hex(24)
    data = folder / "data"
    plane = ControlPlane(
        folder=folder,
        server=f"https://127.0.0.1:{port}",
        ca_file=data / "server" / "tls" / "server-ca.crt",
        admin=Identity(user="gpu-slots-test-admin", token=token),
        processes={},
    )
    node = K3sNode(name, folder, plane, MachineState.now(), lock)
    try:
        (data / "agent" / "images").mkdir(parents=True)
        for archive in images:  # the air-gapped import: k3s loads these when it starts
            shutil.copy(archive, data / "agent" / "images" / archive.name)
        cni = folder / "cni"
        cni.mkdir()
        (cni / "10-gpu-slots-node.conflist").write_text(cni_config(cni))
        template = data / "agent" / "etc" / "containerd" / "config.toml.tmpl"
        template.parent.mkdir(parents=True)
        template.write_text(CONTAINERD_TEMPLATE.format(conf_dir=cni))
        tokens = folder / "tokens.csv"
        tokens.write_text(f'{token},gpu-slots-test-admin,gpu-slots-test-admin,"system:masters"\n')
        toolkit = _toolkit_path(folder, mock_nvml, machine_file)
        for hierarchy in hierarchies():  # the kubelet's cgroup root must exist
            (hierarchy / CGROUP_ROOT).mkdir(exist_ok=True)
        command = [
            str(k3s),
            "server",
            f"--data-dir={data}",
            f"--https-listen-port={port}",
            f"--write-kubeconfig={folder / 'kubeconfig.yaml'}",
            "--write-kubeconfig-mode=600",
            f"--disable={DISABLED}",
            "--flannel-backend=none",
            "--disable-network-policy",
            f"--cluster-cidr={CLUSTER_CIDR}",
            f"--service-cidr={SERVICE_CIDR}",
            f"--node-name={name}",
            f"--pause-image={pause_image}",
            f"--helm-job-image={helm_job_image}",
            f"--kube-apiserver-arg=token-auth-file={tokens}",
            *(f"--node-label={k}={v}" for k, v in sorted(labels.items())),
            *(f"--kubelet-arg={arg}" for arg in KUBELET_ARGS),
        ]
        env = {**os.environ, "PATH": _k3s_path(folder, k3s, toolkit)}
        node.spawn("k3s", command, env=env)
        node.wait(
            lambda: _node_ready(plane, name),
            what=f"k3s Node {name} Ready",
            timeout_s=START_TIMEOUT_S,
        )
    except BaseException:
        node.stop()
        raise
    return node
