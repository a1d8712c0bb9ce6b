"""The real node's container images, made on the machine: no registry is reachable.

An image is a docker-archive tar (one layer) that `ctr -n k8s.io images import` takes:
`pause` (the sandbox image and the workloads' container) and the device plugin (the
plugin binary and config-manager built from its module, our mock `libnvidia-ml.so.1` and
the C libraries they link against, copied from the host). The mock in the plugin's pod
reads the node's machine file from `/var/lib/kubelet/device-plugins/`, the host folder the
seed's DaemonSet already mounts: the test writes it on the host, and the plugin sees GPU
failures as they are written.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import tarfile
from pathlib import Path

PAUSE_IMAGE = "localhost/gpu-slots-test/pause:1"
PLUGIN_IMAGE = "localhost/gpu-slots-test/k8s-device-plugin:v0.19.3"
DEVICE_PLUGINS = "/var/lib/kubelet/device-plugins"  # the seed DaemonSet's hostPath mount
MACHINE_FILE = f"{DEVICE_PLUGINS}/gpu-slots-mock-nvml.json"
_LIBRARY = re.compile(r"(/\S+)\s+\(0x")


def _add_bytes(layer: tarfile.TarFile, path: str, data: bytes, *, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.size = len(data)
    info.mode = mode
    layer.addfile(info, io.BytesIO(data))


def _add_dirs(layer: tarfile.TarFile, paths: list[str]) -> None:
    made: set[str] = set()
    for path in paths:
        parts = Path(path.lstrip("/")).parent.parts
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder not in made:
                made.add(folder)
                info = tarfile.TarInfo(folder)
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                layer.addfile(info)


def shared_libraries(*binaries: Path) -> list[Path]:
    """The host's C libraries the binaries load (ldd), the dynamic loader included."""
    found: set[Path] = set()
    for binary in binaries:
        done = subprocess.run(
            ["ldd", str(binary)], capture_output=True, text=True, timeout=60, check=False
        )
        found.update(Path(m) for m in _LIBRARY.findall(done.stdout))
    return sorted(found)


def write_image(
    target: Path,
    *,
    name: str,
    files: dict[str, bytes | Path],
    entrypoint: list[str],
    env: dict[str, str] | None = None,
    user: str = "",
) -> Path:
    """A docker-archive tar at `target` holding `files` (image path -> content or host file)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as layer:
        _add_dirs(layer, [*files, "/tmp/.keep"])
        for path, content in sorted(files.items()):
            if isinstance(content, Path):
                mode = content.stat().st_mode & 0o777
                _add_bytes(layer, path, content.read_bytes(), mode=mode)
            else:
                _add_bytes(layer, path, content)
    layer_bytes = buffer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": entrypoint,
            "Env": [f"{k}={v}" for k, v in (env or {}).items()] or ["PATH=/usr/bin:/bin"],
            **({"User": user} if user else {}),
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [name], "Layers": ["layer.tar"]}]
    with tarfile.open(target, mode="w") as archive:
        _add_bytes(archive, "layer.tar", layer_bytes)
        _add_bytes(archive, config_name, config_bytes)
        _add_bytes(archive, "manifest.json", json.dumps(manifest).encode())
    return target


def pause_image(folder: Path, pause: Path) -> Path:
    return write_image(
        folder / "pause.tar", name=PAUSE_IMAGE, files={"/pause": pause}, entrypoint=["/pause"]
    )


def plugin_image(folder: Path, *, plugin: Path, config_manager: Path, mock_nvml: Path) -> Path:
    """The plugin as NVIDIA ships it (with config-manager), over our mock library."""
    files: dict[str, bytes | Path] = {
        "/usr/bin/nvidia-device-plugin": plugin,
        "/usr/bin/config-manager": config_manager,
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1": mock_nvml,
        "/etc/passwd": b"root:x:0:0:root:/root:/bin/false\n",
    }
    for library in shared_libraries(plugin, mock_nvml):
        files[str(library)] = library.resolve()
        if library.name.startswith("ld-linux"):
            files[f"/lib64/{library.name}"] = library.resolve()
    return write_image(
        folder / "plugin.tar",
        name=PLUGIN_IMAGE,
        files=files,
        entrypoint=["/usr/bin/nvidia-device-plugin"],
        env={
            "PATH": "/usr/bin:/bin",
            "LD_LIBRARY_PATH": "/usr/lib/x86_64-linux-gnu",
            "GPU_SLOTS_MOCK_NVML_CONFIG": MACHINE_FILE,
        },
    )
