"""What a real node may change on the machine outside its folder, and checks for what it needs.

`MachineState.now()` is taken before the node starts; `RealNode.stop()` puts back what
differs (mounts under the node's paths, its bridge, the `cni-` network namespaces, its
cgroups, the sysctls the kubelet sets, the global folders it made) and `leftovers()` lists
what is still there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

KUBELET_ROOT = Path("/var/lib/kubelet")
CGROUP_ROOT = "gpu-slots-node"
BRIDGE = "gpuslots0"
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


def read_value(path: Path) -> str:
    return path.read_text().strip()


def mounts() -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        points.append(line.split()[4].replace("\\040", " "))
    return points


def links() -> set[str]:
    done = subprocess.run(
        ["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=30, check=False
    )
    return {line.split(":")[1].strip().split("@")[0] for line in done.stdout.splitlines()}


def hierarchies() -> list[Path]:
    """The roots the kubelet's cgroup root must exist in: the unified one, or each v1 mount."""
    top = Path("/sys/fs/cgroup")
    if (top / "cgroup.controllers").exists():
        return [top]
    return sorted(p for p in top.iterdir() if p.is_dir() and (p / "cgroup.procs").exists())


def netns() -> set[str]:
    folder = Path("/run/netns")
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def cgroup_dirs() -> list[Path]:
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
                sysctls[name] = read_value(path)
        return cls(
            sysctls=sysctls,
            mounts=set(mounts()),
            links=links(),
            existing={p for p in GLOBAL_DIRS if p.exists()},
            netns=netns(),
        )


def rmdir_waiting(path: Path) -> None:
    deadline = time.monotonic() + 10
    while path.exists():
        try:
            path.rmdir()
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)
