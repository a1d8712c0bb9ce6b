"""Checks of a mode change that concern installs and flags beyond the sharing block."""

from __future__ import annotations

from app.domain.changes.models import ChangeRequest, PlanRefused, RefusalCode
from app.domain.dra_models import DraInstall
from app.domain.plugin.config import ALLOCATION_POLICIES
from app.domain.plugin.daemonset import Version

POLICY_SINCE: Version = (0, 20, 0)


def check_policy(request: ChangeRequest, version: Version | None) -> None:
    """sharedDevicesAllocationPolicy: a value v0.20 accepts, on a plugin that reads it."""
    policy = request.allocation_policy
    if policy is None:
        return
    if policy not in ALLOCATION_POLICIES:
        raise PlanRefused(
            RefusalCode.OUT_OF_RANGE,
            f"sharedDevicesAllocationPolicy must be one of {', '.join(ALLOCATION_POLICIES)} "
            f"(device plugin v0.20), got {policy!r}; nothing was written.",
        )
    if version is not None and version < POLICY_SINCE:
        raise PlanRefused(
            RefusalCode.OUT_OF_RANGE,
            "sharedDevicesAllocationPolicy needs device plugin v0.20.0 or later; this DaemonSet "
            "runs v{}.{}.{}. Nothing was written.".format(*version),
        )


def dra_only_message(install: DraInstall) -> str:
    owner = {
        "gpu-operator": "the GPU Operator's GPUCluster",
        "helm": "the DRA driver's Helm release",
    }.get(install.managed_by, "its owner")
    return (
        f"This cluster hands out GPUs through the DRA driver ({install.daemonset}, managed by "
        f"{owner}) and runs no device plugin: there is no device-plugin DaemonSet or ConfigMap "
        "to change. Sharing is set per ResourceClaim (GpuConfig) or in the DRA driver's "
        "settings."
    )
