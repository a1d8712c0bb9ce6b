"""What a real node may change on the machine outside its folder, and checks for what it needs.

`MachineState.now()` is taken before the node starts; `RealNode.stop()` puts back what
differs (mounts under the node's paths, its bridge, the `cni-` network namespaces, its
cgroups, the sysctls the kubelet sets, the global folders it made, the `KUBE-` iptables
chains the kubelet and kube-proxy write) and `leftovers()` lists
what is still there.
"""

from __future__ import annotations

import os
import shlex
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
    # k3s's agent sets these too (pkg/agent/syssetup).
    "net/ipv4/conf/all/forwarding",
    "net/ipv4/conf/default/forwarding",
    "net/ipv6/conf/all/forwarding",
    "net/ipv6/conf/default/forwarding",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "net/core/devconf_inherit_init_net",
    "net/netfilter/nf_conntrack_max",
    "net/netfilter/nf_conntrack_tcp_timeout_established",
    "net/netfilter/nf_conntrack_tcp_timeout_close_wait",
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
    # k3s's (tests/k3s): its containerd's state, its node password, its default data folder.
    Path("/run/k3s"),
    Path("/etc/rancher"),
    Path("/var/lib/rancher"),
)
TOOLS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "openssl", "nft")


class NodeSkipped(RuntimeError):
    """This machine cannot run a real node (not root, a tool or a kernel feature missing)."""


def missing_requirements() -> str | None:
    """Why a real node cannot run here, or None."""
    if os.geteuid() != 0:
        return "the real-node tier runs containerd and a kubelet: it needs root"
    for tool in TOOLS:
        if shutil.which(tool) is None:
            return (
                f"{tool} not found: the real-node tier needs Debian's containerd, runc, "
                "containernetworking-plugins and nftables (`make tools` installs them as root)"
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


def kube_chains() -> set[str]:
    """`tool:table:chain` of every `KUBE-` iptables chain (IPv4, IPv6), and kube-proxy's
    nftables tables as `nft:family:name` (the kubelet and kube-proxy make both)."""
    found: set[str] = set()
    for tool in ("iptables", "ip6tables"):
        done = subprocess.run(
            [f"{tool}-save"], capture_output=True, text=True, timeout=30, check=False
        )
        table = ""
        for line in done.stdout.splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":KUBE-"):
                found.add(f"{tool}:{table}:{line.split()[0][1:]}")
    done = subprocess.run(
        ["nft", "list", "tables"], capture_output=True, text=True, timeout=30, check=False
    )
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "table" and "kube-proxy" in parts[2]:
            found.add(f"nft:{parts[1]}:{parts[2]}")
    return found


def remove_chains(chains: set[str]) -> None:
    """The rules jumping to `chains` deleted, then the chains flushed and deleted."""
    for entry in sorted(chains):
        tool, table, name = entry.split(":")
        if tool == "nft":
            subprocess.run(["nft", "delete", "table", table, name], timeout=30, check=False)
            continue
        saved = subprocess.run(
            [f"{tool}-save", "-t", table], capture_output=True, text=True, timeout=30, check=False
        )
        for line in saved.stdout.splitlines():
            rule = shlex.split(line)
            if rule[:1] == ["-A"] and rule[1] != name and rule[-2:] == ["-j", name]:
                subprocess.run([tool, "-t", table, "-D", *rule[1:]], timeout=30, check=False)
    for entry in sorted(chains):
        tool, table, name = entry.split(":")
        if tool != "nft":
            subprocess.run([tool, "-t", table, "-F", name], capture_output=True, timeout=30)
    for entry in sorted(chains):
        tool, table, name = entry.split(":")
        if tool != "nft":
            subprocess.run([tool, "-t", table, "-X", name], capture_output=True, timeout=30)


@dataclass
class MachineState:
    """What the node may change outside its folder, taken before it starts."""

    sysctls: dict[str, str]
    mounts: set[str]
    links: set[str]
    existing: set[Path]
    netns: set[str]
    chains: set[str]

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
            chains=kube_chains(),
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
