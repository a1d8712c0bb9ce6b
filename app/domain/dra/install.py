"""A DRA driver install found by what runs: the NVIDIA DRA driver's kubelet-plugin DaemonSet.

GPU Operator v26.7's GPUCluster deploys the DRA stack and no device plugin at all (its
DeviceClass `gpu.nvidia.com` has no extendedResourceName); NVIDIA's DRA driver chart does
the same through Helm. Such a cluster has no device-plugin DaemonSet or ConfigMap to change.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.cluster import Manifest
from app.domain.dra.objects import NVIDIA_DRIVER, read_device_class
from app.domain.dra_models import DraInstall

KUBELET_PLUGIN = "gpu-kubelet-plugin"  # the driver's GPU binary
# The GPUCluster operand's own name (golden outputs of the operator v26.7); the DRA driver
# chart's DaemonSet carries Helm's labels instead.
OPERATOR_OPERAND = "nvidia-dra-driver"
_OWNERS = ("GPUCluster", "ClusterPolicy")


def is_dra_kubelet_plugin(daemonset: Manifest) -> bool:
    """A DaemonSet running the NVIDIA DRA driver's GPU kubelet plugin."""
    pod_spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in pod_spec.get("containers") or []:
        words = " ".join(map(str, (container.get("command") or []) + (container.get("args") or [])))
        if KUBELET_PLUGIN in words:
            return True
    return False


def dra_managed_by(daemonset: Manifest) -> str:
    meta = daemonset.get("metadata") or {}
    for owner in meta.get("ownerReferences") or []:
        api = str(owner.get("apiVersion", ""))
        if owner.get("kind") in _OWNERS and api.startswith("nvidia.com/"):
            return "gpu-operator"
    labels = meta.get("labels") or {}
    if labels.get("app.kubernetes.io/managed-by") == "Helm":
        return "helm"
    if labels.get("app.kubernetes.io/name") == OPERATOR_OPERAND:
        return "gpu-operator"
    return "other"


def read_dra_install(
    daemonsets: Sequence[Manifest],
    device_classes: Sequence[Manifest],
    *,
    device_plugin: bool,
) -> DraInstall | None:
    """The DRA driver install, if one runs; `device_plugin`: a plugin DaemonSet runs too."""
    found = [ds for ds in daemonsets if is_dra_kubelet_plugin(ds)]
    if not found:
        return None
    daemonset = sorted(found, key=_ref)[0]
    classes = sorted(
        info.name for info in map(read_device_class, device_classes) if info.driver == NVIDIA_DRIVER
    )
    mapped = sorted(
        str(info.extended_resource)
        for info in map(read_device_class, device_classes)
        if info.driver == NVIDIA_DRIVER and info.extended_resource
    )
    return DraInstall(
        daemonset=_ref(daemonset),
        managed_by=dra_managed_by(daemonset),  # type: ignore[arg-type]
        device_classes=classes,
        extended_resources=mapped,
        device_plugin=device_plugin,
    )


def _ref(daemonset: Manifest) -> str:
    meta = daemonset.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"
