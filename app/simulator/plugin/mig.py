"""MIG as the device plugin serves it: the strategy, and the devices each strategy advertises.

The strategy is the one the plugin's config reader settled (app.simulator.plugin.sharing:
`MIG_STRATEGY`, else `flags.migStrategy`, else none): `none` counts
MIG-enabled GPUs as whole GPUs; `single` advertises every MIG device as `nvidia.com/gpu`
(all GPUs MIG-enabled with one profile, else the plugin exits); `mixed` advertises
`nvidia.com/gpu` for GPUs with MIG off and one `nvidia.com/mig-<profile>` per MIG device
(v0.20+ keeps `+me`-style suffixes, `+` as `.`; earlier versions fold a suffixed profile
into its base profile's name).
"""

from __future__ import annotations

import re

from app.simulator.node.inventory import SimGpu
from app.simulator.plugin.container import image_version

_BASE_PROFILE = re.compile(r"(\d+g\.\d+gb)")


def _anchored(image: str) -> bool:
    version = image_version(image)
    return version is not None and version >= (0, 20, 0)


def mig_resource(profile: str, image: str) -> str | None:
    if _anchored(image):
        return "nvidia.com/mig-" + profile.replace("+", ".")
    match = _BASE_PROFILE.search(profile)
    return "nvidia.com/mig-" + match[1] if match else None


def base_devices(
    visible: tuple[SimGpu, ...], strategy: str, image: str
) -> dict[str, list[tuple[SimGpu, str]]]:
    """Resource name -> (GPU, device id) of every device the plugin would serve, unreplicated.

    Raises ValueError with the plugin's message for a layout the strategy refuses.
    """
    devices: dict[str, list[tuple[SimGpu, str]]] = {}
    mig = [g for g in visible if g.mig_enabled]
    if strategy not in ("none", "single", "mixed"):
        raise ValueError(f"unknown MIG strategy: {strategy}")
    if strategy == "none" or not mig:
        devices["nvidia.com/gpu"] = [(g, g.uuid) for g in visible]
        return devices
    if strategy == "single":
        if len(mig) != len(visible):
            raise ValueError(
                "all devices on the node must be configured with the same migEnabled value"
            )
        if len({m.profile for g in mig for m in g.mig_devices}) > 1:
            raise ValueError("more than one MIG device type present on node")
        devices["nvidia.com/gpu"] = [(g, m.uuid) for g in mig for m in g.mig_devices]
        return devices
    whole = [(g, g.uuid) for g in visible if not g.mig_enabled]
    if whole:
        devices["nvidia.com/gpu"] = whole
    for gpu in mig:
        for device in gpu.mig_devices:
            name = mig_resource(device.profile, image)
            if name is None:
                raise ValueError(f"MIG profile {device.profile} matches no resource pattern")
            devices.setdefault(name, []).append((gpu, device.uuid))
    return devices
