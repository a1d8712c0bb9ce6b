"""A real GPU node without a GPU: containerd, runc and a kubelet v1.35.4 on this machine.

Debian's containerd (its own root, state, socket and CNI folder under the test's folder;
CRI with `restrict_oom_score_adj`, runc with cgroupfs, a `nvidia` runtime handler that is
plain runc, as k3s names it) and the kubelet (`failCgroupV1: false`, `cgroupDriver:
cgroupfs`, its cgroups under `/gpu-slots-node`, a client certificate for
`system:node:<name>` signed by the control plane's CA). The kubelet's root is
`/var/lib/kubelet`, where the device plugin's DaemonSet mounts `device-plugins/` and the
agent reads `pod-resources/`: one node on the machine at a time (a lock).

Everything the node changes outside its folder is put back by `stop()`: pods and
containers stopped, mounts unmounted, cgroups removed, the CNI bridge and network
namespaces deleted, the sysctls the kubelet sets restored, `/var/lib/kubelet` and the
other folders it made removed. `leftovers()` says what is still there.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import yaml

from tests.node.build import NodeBinaries
from tests.node.images import PAUSE_IMAGE
from tests.real.controlplane import ControlPlane, free_port

KUBELET_ROOT = Path("/var/lib/kubelet")
CGROUP_ROOT = "gpu-slots-node"
BRIDGE = "gpuslots0"
SUBNET = "10.244.77.0/24"
LOCK = Path("/run/gpu-slots-real-node.lock")
# What the kubelet sets (pkg/kubelet/cm setupKernelTunables) and the bridge may set.
SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/ipv4/ip_forward",
)
# Folders outside the test's folder that the kubelet, containerd or CNI make when missing.
GLOBAL_DIRS = (
    KUBELET_ROOT,
    Path("/var/log/containers"),
    Path("/var/log/pods"),
    Path("/var/lib/cni"),
    Path("/run/containerd"),
    Path("/run/netns"),
    Path("/etc/kubernetes"),
)
TOOLS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "openssl")
START_TIMEOUT_S = 90.0


class NodeSkipped(RuntimeError):
    """This machine cannot run a real node (not root, a tool or a kernel feature missing)."""


def missing_requirements() -> str | None:
    """Why a real node cannot run here, or None."""
    if os.geteuid() != 0:
        return "the real-node tier runs containerd and a kubelet: it needs root"
    for tool in TOOLS:
        if shutil.which(tool) is None:
            return (
                f"{tool} not found: the real-node tier needs Debian's containerd, runc and "
                "containernetworking-plugins (`make tools` installs them as root)"
            )
    if not Path("/usr/lib/cni/bridge").exists():
        return "no CNI bridge plugin at /usr/lib/cni (package containernetworking-plugins)"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "the kernel has no overlay filesystem (containerd's snapshotter)"
    controllers = ("cpu", "memory", "pids", "cpuset")
    cgroup = Path("/sys/fs/cgroup")
    if (
        not all((cgroup / c).is_dir() for c in controllers)
        and not (cgroup / "cgroup.controllers").exists()
    ):
        return "no cpu/memory/pids cgroup controllers mounted under /sys/fs/cgroup"
    return None


def _read(path: Path) -> str:
    return path.read_text().strip()


def _mounts() -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        points.append(line.split()[4].replace("\\040", " "))
    return points


def _links() -> set[str]:
    done = subprocess.run(
        ["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=30, check=False
    )
    return {line.split(":")[1].strip().split("@")[0] for line in done.stdout.splitlines()}


def _hierarchies() -> list[Path]:
    """The roots the kubelet's cgroup root must exist in: the unified one, or each v1 mount."""
    top = Path("/sys/fs/cgroup")
    if (top / "cgroup.controllers").exists():
        return [top]
    return sorted(p for p in top.iterdir() if p.is_dir() and (p / "cgroup.procs").exists())


def _netns() -> set[str]:
    folder = Path("/run/netns")
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def _cgroup_dirs() -> list[Path]:
    return sorted(Path("/sys/fs/cgroup").glob(f"*/{CGROUP_ROOT}")) + sorted(
        Path("/sys/fs/cgroup").glob(CGROUP_ROOT)
    )


@dataclass
class MachineState:
    """What the node may change outside its folder, taken before it starts."""

    sysctls: dict[str, str]
    mounts: set[str]
    links: set[str]
    existing: set[Path]
    netns: set[str]

    @classmethod
    def now(cls) -> MachineState:
        sysctls = {}
        for name in SYSCTLS:
            path = Path("/proc/sys") / name
            if path.exists():
                sysctls[name] = _read(path)
        return cls(
            sysctls=sysctls,
            mounts=set(_mounts()),
            links=_links(),
            existing={p for p in GLOBAL_DIRS if p.exists()},
            netns=_netns(),
        )


def _node_certificate(plane: ControlPlane, folder: Path, name: str) -> tuple[Path, Path]:
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


def _containerd_config(folder: Path) -> str:
    runc = {
        "runtime_type": "io.containerd.runc.v2",
        "options": {"SystemdCgroup": False},
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
                    "runtimes": {"runc": runc, "nvidia": runc},
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


def _cni_config(folder: Path) -> str:
    return json.dumps(
        {
            "cniVersion": "0.4.0",
            "name": "gpu-slots-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": False,
                    "ipMasq": False,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": SUBNET}]],
                        "dataDir": str(folder / "ipam"),
                    },
                }
            ],
        }
    )


def _kubelet_config(plane: ControlPlane, folder: Path, containerd: Path) -> dict[str, Any]:
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
        "nodeStatusReportFrequency": "10s",
        "syncFrequency": "5s",
        "serializeImagePulls": False,
        "containerLogMaxSize": "1Mi",
    }


@dataclass
class RealNode:
    """A started node; `stop()` puts the machine back as `before` found it."""

    name: str
    folder: Path
    plane: ControlPlane
    before: MachineState
    lock: IO[str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: list[IO[bytes]] = field(default_factory=list)

    @property
    def containerd_socket(self) -> Path:
        return self.folder / "containerd" / "containerd.sock"

    @property
    def pod_resources_socket(self) -> Path:
        return KUBELET_ROOT / "pod-resources" / "kubelet.sock"

    def log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace")[-8000:] if path.exists() else ""

    def spawn(self, name: str, command: list[str], *, env: dict[str, str] | None = None) -> None:
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - closed by stop()
        self.logs.append(log)
        self.processes[name] = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, env=env
        )

    def ctr(self, *args: str, timeout_s: float = 120) -> str:
        done = subprocess.run(
            ["ctr", "--address", str(self.containerd_socket), "-n", "k8s.io", *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args)}: {done.stderr}")
        return done.stdout

    def import_image(self, archive: Path) -> None:
        self.ctr("images", "import", "--no-unpack=false", str(archive))

    def wait(self, probe: Callable[[], object], *, what: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited while waiting for {what}:\n{self.log(name)}")
            if probe():
                return
            time.sleep(0.25)
        raise RuntimeError(
            f"timed out after {timeout_s} s waiting for {what}:\n{self.log('kubelet')}"
        )

    # ---- stopping: the pods, the kubelet, containerd, then what they left on the machine

    def _tasks(self) -> list[str]:
        try:
            rows = self.ctr("tasks", "ls", "-q", timeout_s=30).split()
        except (RuntimeError, subprocess.TimeoutExpired):
            return []
        return rows

    def _ctr_quietly(self, *args: str) -> None:
        address = str(self.containerd_socket)
        command = ["ctr", "--address", address, "-n", "k8s.io", *args]
        subprocess.run(command, capture_output=True, timeout=30, check=False)

    def _delete_workloads(self) -> None:
        """Every DaemonSet and pod bound to this node deleted, so the kubelet stops them."""
        with self.plane.http() as http:
            for ds in http.get("/apis/apps/v1/daemonsets").json().get("items") or []:
                meta = ds["metadata"]
                http.delete(
                    f"/apis/apps/v1/namespaces/{meta['namespace']}/daemonsets/{meta['name']}"
                )
            pods = http.get(
                "/api/v1/pods", params={"fieldSelector": f"spec.nodeName={self.name}"}
            ).json()
            for pod in pods.get("items") or []:
                meta = pod["metadata"]
                http.delete(
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    params={"gracePeriodSeconds": "1"},
                )

    def _stop_process(self, name: str) -> None:
        process = self.processes.get(name)
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)

    def stop(self) -> None:
        try:
            if self.processes.get("kubelet") and self.processes["kubelet"].poll() is None:
                try:
                    self._delete_workloads()
                    deadline = time.monotonic() + 90
                    while self._tasks() and time.monotonic() < deadline:
                        time.sleep(0.5)
                except (httpx.HTTPError, RuntimeError, subprocess.TimeoutExpired):
                    pass  # the sweep below stops what is left
            self._stop_process("kubelet")
            for task in self._tasks():
                self._ctr_quietly("tasks", "kill", "-s", "SIGKILL", task)
            deadline = time.monotonic() + 30
            while self._tasks() and time.monotonic() < deadline:
                time.sleep(0.5)
            for task in self._tasks():
                self._ctr_quietly("tasks", "delete", "-f", task)
            self._stop_process("containerd")
        finally:
            for log in self.logs:
                log.close()
            self._sweep()
            self.lock.close()

    def _sweep(self) -> None:
        owned = (str(self.folder), str(KUBELET_ROOT), "/run/netns/", "/run/containerd/")
        for point in reversed(_mounts()):
            if point not in self.before.mounts and point.startswith(owned):
                done = subprocess.run(
                    ["umount", point], capture_output=True, timeout=30, check=False
                )
                if done.returncode != 0:
                    subprocess.run(
                        ["umount", "-l", point], capture_output=True, timeout=30, check=False
                    )
        for name in _netns() - self.before.netns:
            if name.startswith("cni-"):
                (Path("/run/netns") / name).unlink(missing_ok=True)
        if BRIDGE in _links() - self.before.links:  # its veths went with the pods' netns
            subprocess.run(
                ["ip", "link", "delete", BRIDGE], capture_output=True, timeout=30, check=False
            )
        for top in _cgroup_dirs():
            for child in sorted(top.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if child.is_dir():
                    _rmdir(child)
            _rmdir(top)
        for name, value in self.before.sysctls.items():
            path = Path("/proc/sys") / name
            if _read(path) != value:
                path.write_text(value)
        for path in GLOBAL_DIRS:
            if path not in self.before.existing and path.exists():
                shutil.rmtree(path, ignore_errors=True)

    def leftovers(self) -> list[str]:
        """What the node left behind on the machine (empty after a clean `stop()`)."""
        found: list[str] = []
        owned = (str(self.folder), str(KUBELET_ROOT), "/run/netns/", "/run/containerd/")
        found += [
            f"mount {p}" for p in _mounts() if p not in self.before.mounts and p.startswith(owned)
        ]
        found += [f"link {BRIDGE}"] if BRIDGE in _links() - self.before.links else []
        found += [f"netns {n}" for n in _netns() - self.before.netns if n.startswith("cni-")]
        found += [f"cgroup {p}" for p in _cgroup_dirs()]
        for name, value in self.before.sysctls.items():
            now = _read(Path("/proc/sys") / name)
            if now != value:
                found.append(f"sysctl {name} = {now} (was {value})")
        found += [
            f"folder {p}" for p in GLOBAL_DIRS if p not in self.before.existing and p.exists()
        ]
        found += [f"process {n}" for n, p in self.processes.items() if p.poll() is None]
        return found


def _rmdir(path: Path) -> None:
    deadline = time.monotonic() + 10
    while path.exists():
        try:
            path.rmdir()
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)


def _node_ready(plane: ControlPlane, name: str) -> bool:
    with plane.http() as http:
        answer = http.get(f"/api/v1/nodes/{name}")
    if answer.status_code != 200:
        return False
    conditions = answer.json()["status"].get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def start_node(
    plane: ControlPlane,
    binaries: NodeBinaries,
    folder: Path,
    *,
    name: str,
    labels: dict[str, str],
    images: list[Path],
) -> RealNode:
    """containerd (images imported), then the kubelet; waits for the Node to be Ready."""
    reason = missing_requirements()
    if reason:
        raise NodeSkipped(reason)
    folder.mkdir(parents=True, exist_ok=True)
    lock = open(LOCK, "w")  # noqa: SIM115 - closed by RealNode.stop
    fcntl.flock(lock, fcntl.LOCK_EX)
    node = RealNode(name, folder, plane, MachineState.now(), lock)
    try:
        containerd = folder / "containerd"
        (containerd / "net.d").mkdir(parents=True)
        (containerd / "net.d" / "10-gpu-slots-node.conflist").write_text(_cni_config(containerd))
        (containerd / "config.toml").write_text(_containerd_config(containerd))
        node.spawn("containerd", ["containerd", "--config", str(containerd / "config.toml")])
        node.wait(
            lambda: node.containerd_socket.exists() and bool(_ctr_ok(node)),
            what="containerd to serve",
            timeout_s=START_TIMEOUT_S,
        )
        for archive in images:
            node.import_image(archive)
        for hierarchy in _hierarchies():
            (hierarchy / CGROUP_ROOT).mkdir(exist_ok=True)
        cert, key = _node_certificate(plane, folder, name)
        kubeconfig = folder / "kubelet.kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
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
                    "contexts": [
                        {"name": "real", "context": {"cluster": "real", "user": "kubelet"}}
                    ],
                    "current-context": "real",
                }
            )
        )
        config = folder / "kubelet.yaml"
        config.write_text(yaml.safe_dump(_kubelet_config(plane, folder, node.containerd_socket)))
        node.spawn(
            "kubelet",
            [
                str(binaries.kubelet),
                f"--config={config}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={KUBELET_ROOT}",
                f"--cert-dir={folder / 'kubelet-pki'}",
                f"--hostname-override={name}",
                "--node-ip=127.0.0.1",
                "--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
                "--v=1",
            ],
        )
        node.wait(
            lambda: _node_ready(plane, name), what=f"Node {name} Ready", timeout_s=START_TIMEOUT_S
        )
    except BaseException:
        node.stop()
        raise
    return node


def _ctr_ok(node: RealNode) -> bool:
    try:
        node.ctr("version", timeout_s=10)
    except (RuntimeError, subprocess.TimeoutExpired):
        return False
    return True
