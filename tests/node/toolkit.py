"""What the NVIDIA container toolkit does for a GPU container, done for the mock library.

On a GPU node the `nvidia` runtime (nvidia-container-runtime, a shim over runc) edits each
container's OCI spec before runc creates it: where the container's environment names
`NVIDIA_VISIBLE_DEVICES`, it mounts the driver's `libnvidia-ml.so.1` (and the devices) in.
`RUNTIME` here is the same idea, a runc wrapper that containerd runs for the RuntimeClass
`MOCK_RUNTIME_CLASS`: it bind-mounts our mock library read-only at
`/usr/local/nvidia/lib64` (the path NVIDIA's images put on `LD_LIBRARY_PATH`), and the
machine file the mock reads, and sets both variables. The chart's agent selects it with its
`agent.runtimeClassName` value, as it selects `nvidia` on k3s; the image stays ours, unchanged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

MOCK_RUNTIME_CLASS = "nvidia-mock-toolkit"
HANDLER = "nvidia-mock-toolkit"
LIBRARY_DIR = "/usr/local/nvidia/lib64"

_WRAPPER = """#!/usr/bin/python3
# runc, with the mock NVML mounted into containers that ask for GPUs (tests/node/toolkit.py).
import json, os, sys
RUNC, EDITS = {runc!r}, json.loads({edits!r})
args = sys.argv[1:]
if "create" in args:
    bundle = os.getcwd()
    for flag in ("--bundle", "-b"):
        if flag in args:
            bundle = args[args.index(flag) + 1]
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        spec = json.load(f)
    env = spec.setdefault("process", {{}}).setdefault("env", [])
    if any(e.startswith("NVIDIA_VISIBLE_DEVICES=") for e in env):
        mounts = spec.setdefault("mounts", [])
        taken = {{m.get("destination") for m in mounts}}  # the pod's own mounts stay as they are
        mounts.extend(m for m in EDITS["mounts"] if m["destination"] not in taken)
        env.extend(EDITS["env"])
        with open(path, "w") as f:
            json.dump(spec, f)
os.execv(RUNC, [RUNC, *args])
"""


def write_runtime(folder: Path, *, library: Path, machine_file: str) -> Path:
    """The wrapper runc binary, for containerd's runtime options (`BinaryName`)."""
    runc = shutil.which("runc") or "/usr/sbin/runc"
    options = ["rbind", "ro", "nosuid", "nodev"]
    edits = {
        "mounts": [
            {
                "destination": f"{LIBRARY_DIR}/libnvidia-ml.so.1",
                "type": "bind",
                "source": str(library.resolve()),
                "options": options,
            },
            {  # its folder, so that a rewritten (renamed) machine file shows
                "destination": str(Path(machine_file).parent),
                "type": "bind",
                "source": str(Path(machine_file).parent),
                "options": options,
            },
        ],
        "env": [f"LD_LIBRARY_PATH={LIBRARY_DIR}", f"GPU_SLOTS_MOCK_NVML_CONFIG={machine_file}"],
    }
    path = folder / "nvidia-mock-toolkit-runc"
    path.write_text(_WRAPPER.format(runc=runc, edits=json.dumps(edits)))
    path.chmod(0o755)
    return path
