"""Who owns a GPU process: a pod container (from its cgroup) or the host (command, user).

`owner_from_cgroup` is pure over the text of `/proc/<pid>/cgroup`; it understands cgroup
v1 and v2, the cgroupfs and systemd drivers, and containerd (k3s), CRI-O and Docker
container scopes. `read_process` reads `/proc` under a configurable root so tests can
point it at a fixture tree.
"""

from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass
from pathlib import Path

# Kubelet pod cgroups: `pod<uid>` (cgroupfs) or `...-pod<uid with _>.slice` (systemd).
# Static pods have a 32-hex UID without dashes.
_POD = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32})"
    r"(?:\.slice)?(?=/|$)"
)
# A container's own cgroup: `<64 hex>` or `<runtime>-<64 hex>[.scope]`.
_CONTAINER = re.compile(
    r"(?:^|/)(?:(?:cri-containerd|containerd|docker|crio|cri-o|libpod)-)?([0-9a-f]{64})"
    r"(?:\.scope)?/?$"
)
COMMAND_MAX_CHARS = 4096
_READ_MAX_BYTES = 65536


@dataclass(frozen=True, slots=True)
class CgroupOwner:
    """Pod UID (with dashes) and container ID; both None for a host process."""

    pod_uid: str | None = None
    container_id: str | None = None


@dataclass(frozen=True, slots=True)
class ProcessOwner:
    """What /proc tells about a PID; `visible` is False when the agent cannot see it."""

    visible: bool
    pod_uid: str | None = None
    container_id: str | None = None
    command: str | None = None
    user: str | None = None


HOST = CgroupOwner()


def owner_from_cgroup(text: str) -> CgroupOwner:
    """The pod and container a process belongs to, from its `/proc/<pid>/cgroup` text."""
    fallback = HOST
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        path = parts[2].strip()
        container = _CONTAINER.search(path)
        container_id = container.group(1) if container else None
        pod = _POD.search(path)
        if pod:
            return CgroupOwner(pod_uid=pod.group(1).replace("_", "-"), container_id=container_id)
        if container_id and fallback is HOST:
            fallback = CgroupOwner(container_id=container_id)  # plain Docker, not a pod
    return fallback


def command_from_cmdline(raw: bytes) -> str | None:
    """The command line from `/proc/<pid>/cmdline` (NUL-separated), or None when empty."""
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace").strip()
    return text[:COMMAND_MAX_CHARS] or None


def uid_from_status(text: str) -> int | None:
    """The real UID from the `Uid:` line of `/proc/<pid>/status`."""
    for line in text.splitlines():
        if line.startswith("Uid:"):
            fields = line.split()
            if len(fields) > 1 and fields[1].isdigit():
                return int(fields[1])
    return None


def user_name(uid: int) -> str:
    """The user's name from the passwd database, else the number as text."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def read_process(pid: int, *, proc_root: Path, users: dict[int, str] | None = None) -> ProcessOwner:
    """Owner, command and user of a PID as seen under `proc_root` (normally /proc).

    `users` caches uid -> name lookups across the calls of one collection cycle.
    """
    base = os.path.join(proc_root, str(pid))
    cgroup = _read(os.path.join(base, "cgroup"))
    if cgroup is None:
        return ProcessOwner(visible=False)
    owner = owner_from_cgroup(cgroup.decode(errors="replace"))
    command = _read(os.path.join(base, "cmdline"))
    status = _read(os.path.join(base, "status"))
    uid = uid_from_status(status.decode(errors="replace")) if status is not None else None
    user: str | None = None
    if uid is not None:
        cache = users if users is not None else {}
        user = cache.get(uid)
        if user is None:
            user = cache[uid] = user_name(uid)
    return ProcessOwner(
        visible=True,
        pod_uid=owner.pod_uid,
        container_id=owner.container_id,
        command=command_from_cmdline(command) if command is not None else None,
        user=user,
    )


def _read(path: str) -> bytes | None:
    """Up to 64 KiB of a /proc file; None when it cannot be read (gone, no access)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks: list[bytes] = []
        size = 0
        while size < _READ_MAX_BYTES:
            chunk = os.read(fd, _READ_MAX_BYTES - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
