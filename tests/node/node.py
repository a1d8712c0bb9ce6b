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
namespaces deleted, the sysctls the kubelet sets restored, the `KUBE-` iptables chains it
(or kube-proxy) wrote deleted, `/var/lib/kubelet` and the other folders it made removed.
`leftovers()` says what is still there.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO

import httpx
import yaml

from tests.node.build import NodeBinaries
from tests.node.images import MACHINE_FILE
from tests.node.machine_state import (
    BRIDGE,
    CGROUP_ROOT,
    GLOBAL_DIRS,
    KUBELET_ROOT,
    MachineState,
    NodeSkipped,
    cgroup_dirs,
    hierarchies,
    kube_chains,
    links,
    missing_requirements,
    mounts,
    netns,
    read_value,
    remove_chains,
    rmdir_waiting,
)
from tests.node.node_config import (
    cni_config,
    containerd_config,
    kubelet_config,
    kubelet_kubeconfig,
    node_certificate,
)
from tests.node.toolkit import write_runtime
from tests.real.controlplane import ControlPlane

LOCK = Path("/run/gpu-slots-real-node.lock")
# Where containerd's shims and CNI mount below /run (Debian's containerd; k3s's own).
RUN_PATHS = ("/run/netns/", "/run/containerd/", "/run/k3s/")
START_TIMEOUT_S = 90.0


@dataclass
class RealNode:
    """A started node; `stop()` puts the machine back as `before` found it."""

    name: str
    folder: Path
    plane: ControlPlane
    before: MachineState
    lock: IO[str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)
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
        log = open(self.folder / f"{name}.log", "ab")  # noqa: SIM115 - closed by stop()
        self.logs.append(log)
        self.commands[name] = command
        self.processes[name] = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, env=env
        )

    def restart_kubelet(self) -> None:
        """What an operator does when the kubelet keeps a gone plugin's devices: restart it.

        The kubelet (v1.35) can lose track of a plugin that re-registered while its old
        connection was closing (kubernetes/kubernetes#121994): when that plugin then stops,
        nothing tells the device manager, and the node advertises its devices for good. A
        restarted kubelet reads its checkpoint and holds those devices unhealthy (allocatable
        0) until a plugin registers again. The pods keep running meanwhile.
        """
        started = time.time()
        self._stop_process("kubelet")
        self.spawn("kubelet", self.commands["kubelet"])
        self.wait(
            lambda: _node_ready(self.plane, self.name, since=started),
            what=f"Node {self.name} Ready after a kubelet restart",
            timeout_s=START_TIMEOUT_S,
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
        last = list(self.processes)[-1]  # the kubelet here, k3s in tests/k3s
        raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}:\n{self.log(last)}")

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
        owned = (str(self.folder), str(KUBELET_ROOT), *RUN_PATHS)
        for point in reversed(mounts()):
            if point not in self.before.mounts and point.startswith(owned):
                done = subprocess.run(
                    ["umount", point], capture_output=True, timeout=30, check=False
                )
                if done.returncode != 0:
                    subprocess.run(
                        ["umount", "-l", point], capture_output=True, timeout=30, check=False
                    )
        for name in netns() - self.before.netns:
            if name.startswith("cni-"):
                (Path("/run/netns") / name).unlink(missing_ok=True)
        if BRIDGE in links() - self.before.links:  # its veths went with the pods' netns
            subprocess.run(
                ["ip", "link", "delete", BRIDGE], capture_output=True, timeout=30, check=False
            )
        for top in cgroup_dirs():
            for child in sorted(top.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if child.is_dir():
                    rmdir_waiting(child)
            rmdir_waiting(top)
        for name, value in self.before.sysctls.items():
            path = Path("/proc/sys") / name
            if read_value(path) != value:
                path.write_text(value)
        for path in GLOBAL_DIRS:
            if path not in self.before.existing and path.exists():
                shutil.rmtree(path, ignore_errors=True)
        remove_chains(kube_chains() - self.before.chains)

    def leftovers(self) -> list[str]:
        """What the node left behind on the machine (empty after a clean `stop()`)."""
        found: list[str] = []
        owned = (str(self.folder), str(KUBELET_ROOT), *RUN_PATHS)
        found += [
            f"mount {p}" for p in mounts() if p not in self.before.mounts and p.startswith(owned)
        ]
        found += [f"link {BRIDGE}"] if BRIDGE in links() - self.before.links else []
        found += [f"netns {n}" for n in netns() - self.before.netns if n.startswith("cni-")]
        found += [f"cgroup {p}" for p in cgroup_dirs()]
        for name, value in self.before.sysctls.items():
            now = read_value(Path("/proc/sys") / name)
            if now != value:
                found.append(f"sysctl {name} = {now} (was {value})")
        found += [
            f"folder {p}" for p in GLOBAL_DIRS if p not in self.before.existing and p.exists()
        ]
        found += [f"chain {c}" for c in sorted(kube_chains() - self.before.chains)]
        found += [f"process {n}" for n, p in self.processes.items() if p.poll() is None]
        return found


def _node_ready(plane: ControlPlane, name: str, *, since: float = 0.0) -> bool:
    """The Node Ready, by a heartbeat from `since` (a time.time()) on."""
    with plane.http() as http:
        answer = http.get(f"/api/v1/nodes/{name}")
    if answer.status_code != 200:
        return False
    conditions = answer.json()["status"].get("conditions") or []
    return any(
        c["type"] == "Ready"
        and c["status"] == "True"
        and _seconds(c.get("lastHeartbeatTime")) >= int(since)
        for c in conditions
    )


def _seconds(stamp: str | None) -> float:
    """An RFC 3339 time of the API (`2026-12-06T12:00:00Z`) as seconds since the epoch."""
    if not stamp:
        return 0.0
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


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
        (containerd / "net.d" / "10-gpu-slots-node.conflist").write_text(cni_config(containerd))
        toolkit = write_runtime(folder, library=binaries.mock_nvml, machine_file=MACHINE_FILE)
        (containerd / "config.toml").write_text(containerd_config(containerd, toolkit))
        node.spawn("containerd", ["containerd", "--config", str(containerd / "config.toml")])
        node.wait(
            lambda: node.containerd_socket.exists() and bool(_ctr_ok(node)),
            what="containerd to serve",
            timeout_s=START_TIMEOUT_S,
        )
        for archive in images:
            node.import_image(archive)
        for hierarchy in hierarchies():
            (hierarchy / CGROUP_ROOT).mkdir(exist_ok=True)
        cert, key = node_certificate(plane, folder, name)
        kubeconfig = folder / "kubelet.kubeconfig"
        kubeconfig.write_text(kubelet_kubeconfig(plane, cert, key))
        config = folder / "kubelet.yaml"
        config.write_text(yaml.safe_dump(kubelet_config(plane, folder, node.containerd_socket)))
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
