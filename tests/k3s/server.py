"""A real single-node k3s v1.35.1+k3s1 on this machine, air-gapped, with a GPU node's runtime.

`start_k3s` runs `k3s server` (built by tests/k3s/build.py) with its data folder under the
test's folder, as an air-gapped user runs it:
- the images it needs are docker-archive tars dropped into `<data>/agent/images/` before it
  starts (k3s imports them into its containerd); `--pause-image` names our `pause`;
- no CoreDNS, Traefik, ServiceLB, metrics-server or local-path (their images are not here;
  the chart is given the dashboard Service's fixed ClusterIP, see docs/INSTALL.md);
- the machine's containerd, runc and shim (Debian's; k3s runs the `containerd` on its PATH
  when its own bundle is not installed, and writes its config for that version);
- no flannel (its CNI plugin is not Debian's): a bridge network from Debian's
  containernetworking-plugins, set through k3s's `config.toml.tmpl` for containerd;
  k3s's own kube-proxy carries pods to the `kubernetes` Service's ClusterIP;
- the NVIDIA container toolkit's runtime is on PATH as `nvidia-container-runtime` (our
  runc wrapper mounting the mock NVML, tests/node/toolkit.py), so k3s itself adds the
  `nvidia` runtime to its containerd, as it does on a GPU node;
- the kubelet with cgroupfs under `/gpu-slots-node` (this machine's cgroup v1), its root
  `/var/lib/kubelet` (where the plugin's DaemonSet and our agent look), and a static admin
  token for the tests.

`K3sNode.stop()` does what k3s's killall script does: k3s, its containerd, then each shim
and its containers killed; then it puts the machine back (mounts, network namespaces, the
bridge, cgroups, sysctls, the `KUBE-` chains kube-proxy and the kubelet wrote, the folders
k3s made); `leftovers()` lists what is still there. It holds the real node's lock: one
node on the machine at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
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

# k3s's containerd config template (`config.toml.tmpl`, its version 2 for containerd 1.x, the
# values k3s fills in) with two changes: the CNI folders (k3s sets them only for flannel),
# and `restrict_oom_score_adj` (this machine refuses a negative oom_score_adj; k3s sets it
# only inside a user namespace).
CONTAINERD_TEMPLATE = """version = 2
root = {{{{ printf "%q" .NodeConfig.Containerd.Root }}}}
state = {{{{ printf "%q" .NodeConfig.Containerd.State }}}}

[grpc]
  address = {{{{ deschemify .NodeConfig.Containerd.Address | printf "%q" }}}}

[plugins."io.containerd.internal.v1.opt"]
  path = {{{{ printf "%q" .NodeConfig.Containerd.Opt }}}}

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "10010"
  enable_selinux = false
  restrict_oom_score_adj = true
  sandbox_image = "{{{{ .NodeConfig.AgentConfig.PauseImage }}}}"

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "{{{{ .NodeConfig.AgentConfig.Snapshotter }}}}"
  disable_snapshot_annotations = true

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{conf_dir}"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = {{{{ .SystemdCgroup }}}}

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = {{{{ printf "%q" .NodeConfig.Containerd.Registry }}}}
{{{{ range $k, $v := .ExtraRuntimes }}}}
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."{{{{ $k }}}}"]
  runtime_type = "{{{{ $v.RuntimeType }}}}"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."{{{{ $k }}}}".options]
  BinaryName = "{{{{ $v.BinaryName }}}}"
  SystemdCgroup = {{{{ $.SystemdCgroup }}}}
{{{{ end }}}}
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

    def stop(self) -> None:
        """As k3s's own killall script: k3s ended (its kubelet with it), then its containerd,
        then each shim with the containers it runs; then the machine put back."""
        try:
            process = self.processes.get("k3s")
            children = _children(process.pid) if process is not None else []
            self._stop_process("k3s")
            _end(children)  # its containerd, or it re-creates its sockets under /run/k3s
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


def _processes(first: bytes, argument: bytes) -> list[int]:
    """PIDs whose command is `first` (its file name) with `argument` among its arguments."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command and command[0].endswith(first) and argument in command:
            found.append(int(entry.name))
    return found


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (k3s: its containerd)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in task.read_text().split()]
    return found


def _end(pids: list[int]) -> None:
    """Each of `pids` asked to end, then killed if still there after 30 s."""
    for signal_ in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal_)
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)


def _shims() -> list[int]:
    """The PIDs of containerd shims serving k3s's containerd (they outlive it by design)."""
    return _processes(b"containerd-shim-runc-v2", str(K3S_SOCKET).encode())


def _kill_shims() -> None:
    """Each leftover shim and its containers (the shim's children) killed, by PID."""
    for pid in _shims():
        for kid in [*_children(pid), pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(kid, signal.SIGKILL)
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


def _containerd_major() -> int:
    """The machine's containerd's major version (Debian's: k3s runs it, with Debian's runc)."""
    done = subprocess.run(
        ["containerd", "--version"], capture_output=True, text=True, timeout=30, check=True
    )
    found = re.search(r" v?(\d+)\.\d+", done.stdout)
    return int(found[1]) if found else 1


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
    if _containerd_major() != 1:
        raise NodeSkipped("the k3s tier's containerd template is for containerd 1.x (Debian 12)")
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
            # Its API server's and its agent's load balancer's own ports, free ones too
            # (by default the next port up, and 6444).
            f"--apiserver-port={free_port()}",
            f"--lb-server-port={free_port()}",
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
        env = {**os.environ, "PATH": f"{toolkit}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
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
