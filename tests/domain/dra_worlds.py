"""resource.k8s.io/v1 manifests and small clusters with a DRA node, for the engine's tests.

`dra_world()` is two nodes: gpu-1 on the device plugin (as `world()`), and dra-1 with four
A100s published by NVIDIA's DRA driver (gpu-0..gpu-3) and no plugin pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from app.domain.cluster import ClusterState
from app.domain.report import GpuReading
from tests import factories as f

Manifest = dict[str, Any]
DRIVER = "gpu.nvidia.com"
DRA_NODE = "dra-1"


def device_class(
    name: str = "gpu.nvidia.com", *, kind: str = "gpu", extended: str | None = None
) -> Manifest:
    spec: Manifest = {
        "selectors": [
            {
                "cel": {
                    "expression": f"device.driver == '{DRIVER}' && "
                    f"device.attributes['{DRIVER}'].type == '{kind}'"
                }
            }
        ]
    }
    if extended:
        spec["extendedResourceName"] = extended
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": spec,
    }


def gpu_device(index: int, *, node: str = DRA_NODE, memory: str = "80Gi") -> Manifest:
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": f.gpu_uuid(node, index)},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "driverVersion": {"version": "580.65.6"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def mig_device(
    parent: int, *, profile: str = "3g.40gb", start: int = 0, node: str = DRA_NODE
) -> Manifest:
    return {
        "name": f"gpu-{parent}-mig-9-{start}-4",
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": f"MIG-{node}-{parent}-{start}"},
            "parentUUID": {"string": f.gpu_uuid(node, parent)},
            "profile": {"string": profile},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
        },
        "capacity": {"memory": {"value": "40192Mi"}},
    }


def resource_slice(
    node: str = DRA_NODE, devices: Sequence[Manifest] | None = None, *, generation: int = 1
) -> Manifest:
    if devices is None:
        devices = [gpu_device(i, node=node) for i in range(4)]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}-abcde", "resourceVersion": str(10 + generation)},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": list(devices),
        },
    }


def claim(
    name: str,
    *,
    namespace: str = "ml",
    device_class_name: str = "gpu.nvidia.com",
    count: int = 1,
    devices: Sequence[str] = (),
    node: str = DRA_NODE,
    reserved: Sequence[str] = (),
    sharing: Mapping[str, Any] | None = None,
    auto_for: str | None = None,
) -> Manifest:
    """A claim; allocated to `devices` on `node` when given, reserved for `reserved` pods."""
    spec: Manifest = {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {"deviceClassName": device_class_name, "count": count},
                }
            ]
        }
    }
    if sharing is not None:
        spec["devices"]["config"] = [
            {
                "requests": ["gpu"],
                "opaque": {
                    "driver": DRIVER,
                    "parameters": {
                        "apiVersion": "resource.nvidia.com/v1beta1",
                        "kind": "GpuConfig",
                        "sharing": dict(sharing),
                    },
                },
            }
        ]
    meta: Manifest = {"name": name, "namespace": namespace, "resourceVersion": "5"}
    if auto_for is not None:
        meta["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": auto_for}]
    status: Manifest = {}
    if devices:
        status["allocation"] = {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": node, "device": d} for d in devices
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }
    if reserved:
        status["reservedFor"] = [
            {"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved
        ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def claim_pod(
    name: str, claim_name: str, *, node: str | None = DRA_NODE, phase: str = "Running"
) -> Manifest:
    """A pod using a claim by name (no nvidia.com/gpu request)."""
    pod = f.pod(name, node=node, gpus=0, phase=phase)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return pod


def auto_pod(name: str, claim_name: str | None, *, node: str | None = DRA_NODE) -> Manifest:
    """A pod asking for nvidia.com/gpu: 1 that the scheduler served with a DRA claim."""
    pod = f.pod(name, node=node, gpus=1, phase="Running" if node else "Pending")
    if claim_name is not None:
        pod["status"]["extendedResourceClaimStatus"] = {
            "resourceClaimName": claim_name,
            "requestMappings": [
                {
                    "containerName": "main",
                    "resourceName": "nvidia.com/gpu",
                    "requestName": "container-0-request-0",
                }
            ],
        }
    return pod


def pod_proc(pod: str, *, pid: int = 500, mib: int = 5000) -> Any:
    return f.proc(pid, mib=mib, pod_uid=f"uid-{pod}")


def dra_readings(
    on: Mapping[int, Sequence[Any]] | None = None, *, mig: Sequence[int] = ()
) -> list[GpuReading]:
    on = on or {}
    return [
        f.gpu(
            i,
            node_name=DRA_NODE,
            processes=on.get(i, ()),
            mig_mode="enabled" if i in mig else "disabled",
        )
        for i in range(4)
    ]


def dra_world(
    *,
    claims: Sequence[Manifest] = (),
    pods: Sequence[Manifest] = (),
    readings: Sequence[GpuReading] | None = None,
    slices: Sequence[Manifest] | None = None,
    classes: Sequence[Manifest] | None = None,
    plugin_on_dra: bool = False,
    dra_ready: bool = True,
    dra_node: bool = True,
) -> ClusterState:
    nodes = [f.node("gpu-1", allocatable=4)]
    if dra_node:
        nodes.append(f.node(DRA_NODE, allocatable=4 if plugin_on_dra else None, ready=dra_ready))
    plugin_pods = [f.plugin_pod("gpu-1")]
    if plugin_on_dra:
        plugin_pods.append(f.plugin_pod(DRA_NODE))
    reports = [f.report("gpu-1")]
    if dra_node:
        reports.append(f.report(DRA_NODE, readings or dra_readings()))
    state = f.cluster(
        daemonset=f.plugin_daemonset(),
        nodes=nodes,
        pods=[*plugin_pods, *pods],
        reports=reports,
    )
    return replace(
        state,
        device_classes=list(classes) if classes is not None else [device_class()],
        resource_slices=list(slices) if slices is not None else [resource_slice()],
        resource_claims=list(claims),
    )


def _claimed(*, ready: bool = True, on: Mapping[int, Sequence[Any]] | None = None) -> ClusterState:
    return dra_world(
        claims=[claim("c1", devices=["gpu-0"], reserved=["a"])],
        pods=[claim_pod("a", "c1")],
        readings=dra_readings(on),
        dra_ready=ready,
    )


# (code, broken, healthy) for tests/domain/test_findings.py's table of every finding.
DRA_CASES: list[tuple[str, Any, Any]] = [
    (
        "dra-and-device-plugin-on-node",
        lambda: dra_world(plugin_on_dra=True),
        lambda: dra_world(),
    ),
    (
        "dra-device-not-seen-by-agent",
        lambda: dra_world(readings=dra_readings()[:3]),
        lambda: dra_world(),
    ),
    (
        "dra-gpu-not-published",
        lambda: dra_world(slices=[resource_slice(devices=[gpu_device(i) for i in range(3)])]),
        lambda: dra_world(),
    ),
    (
        "dra-claim-on-lost-node",
        lambda: _claimed(ready=False, on={0: [pod_proc("a")]}),
        lambda: _claimed(on={0: [pod_proc("a")]}),
    ),
    (
        "dra-claim-unsatisfiable",
        lambda: dra_world(claims=[claim("big", count=5)]),
        lambda: dra_world(claims=[claim("big", count=4)]),
    ),
    (
        "dra-extended-resource-mapped",
        lambda: dra_world(
            classes=[device_class(extended="nvidia.com/gpu")], pods=[auto_pod("w", None, node=None)]
        ),
        lambda: dra_world(classes=[device_class()], pods=[auto_pod("w", None, node=None)]),
    ),
    (
        "dra-claim-idle",
        lambda: _claimed(),
        lambda: _claimed(on={0: [pod_proc("a")]}),
    ),
]
