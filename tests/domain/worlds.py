"""A one-call builder of small clusters for the engine's tests: healthy unless told otherwise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.engine.build import build_snapshot
from app.domain.report import GpuReading, ReceivedReport
from app.domain.snapshot import Snapshot
from tests import factories as f


def world(
    *,
    ds: bool = True,
    ds_kwargs: Mapping[str, Any] | None = None,
    daemonset: f.Manifest | None = None,
    configmaps: Sequence[f.Manifest] = (),
    nodes: Sequence[f.Manifest] | None = None,
    allocatable: int | None = 4,
    capacity: int | None = None,
    resource: str = "nvidia.com/gpu",
    node_labels: Mapping[str, str] | None = None,
    pods: Sequence[f.Manifest] = (),
    readings: Sequence[GpuReading] | None = None,
    reports: Sequence[ReceivedReport] | None = None,
    report_kwargs: Mapping[str, Any] | None = None,
    plugin_pods: Sequence[f.Manifest] | None = None,
    plugin_pod_kwargs: Mapping[str, Any] | None = None,
    daemonsets: Sequence[f.Manifest] = (),
) -> ClusterState:
    """One k3s node gpu-1 with 4 A100s in basic mode, plugin v0.18.2 Ready, fresh report."""
    if nodes is None:
        nodes = [
            f.node(
                "gpu-1",
                allocatable=allocatable,
                capacity=capacity,
                resource=resource,
                labels=node_labels,
            )
        ]
    if daemonset is None and ds:
        daemonset = f.plugin_daemonset(**(ds_kwargs or {}))
    if plugin_pods is None:
        plugin_pods = [
            f.plugin_pod(n["metadata"]["name"], **(plugin_pod_kwargs or {})) for n in nodes
        ]
    if reports is None:
        reports = [f.report("gpu-1", readings, **(report_kwargs or {}))]
    return f.cluster(
        daemonset=daemonset,
        configmaps=configmaps,
        nodes=nodes,
        pods=[*plugin_pods, *pods],
        reports=reports,
        daemonsets=daemonsets,
    )


def snap(state: ClusterState, *, options: AccountingOptions = f.OPTIONS) -> Snapshot:
    return build_snapshot(state, options=options, now=f.NOW)


def ts_world(
    replicas: int = 4,
    *,
    rename: bool = False,
    fail_gt_one: bool = False,
    mps: bool = False,
    **kwargs: Any,
) -> ClusterState:
    """Time-slicing (or MPS) through the ConfigMap, advertising 4 x replicas."""
    text = f.time_slicing_yaml(replicas, rename=rename, fail_gt_one=fail_gt_one, mps=mps)
    env = {"MPS_ROOT": "/run/nvidia/mps"} if mps else {}
    kwargs.setdefault("allocatable", 4 * replicas)
    kwargs.setdefault("resource", "nvidia.com/gpu.shared" if rename else "nvidia.com/gpu")
    ds_kwargs = {
        "configmap": f.CONFIGMAP,
        "config_file": "/config/config.yaml",
        "env": env,
        **kwargs.pop("ds_kwargs", {}),
    }
    configmaps = kwargs.pop("configmaps", [f.configmap({"config.yaml": text})])
    return world(ds_kwargs=ds_kwargs, configmaps=configmaps, **kwargs)


def config_manager_daemonset(*, default_config: str = "", fallback: str = "empty") -> f.Manifest:
    """The GPU Operator's shape: config-manager sidecar picks a key per node label."""
    sidecar = {
        "name": "config-manager",
        "image": f.IMAGE,
        "command": ["config-manager"],
        "env": [
            {"name": "NODE_LABEL", "value": "nvidia.com/device-plugin.config"},
            {"name": "CONFIG_FILE_SRCDIR", "value": "/available-configs"},
            {"name": "CONFIG_FILE_DST", "value": "/config/config.yaml"},
            {"name": "DEFAULT_CONFIG", "value": default_config},
            {"name": "FALLBACK_STRATEGIES", "value": fallback},
        ],
        "volumeMounts": [
            {"name": "config", "mountPath": "/config"},
            {"name": "available", "mountPath": "/available-configs"},
        ],
    }
    ds = f.plugin_daemonset(
        config_file="/config/config.yaml",
        extra_containers=[sidecar],
        extra_volumes=[
            {"name": "config", "emptyDir": {}},
            {"name": "available", "configMap": {"name": f.CONFIGMAP}},
        ],
    )
    ds["spec"]["template"]["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "config", "mountPath": "/config"}
    )
    return ds
