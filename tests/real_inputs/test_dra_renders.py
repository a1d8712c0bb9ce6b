"""DRA-only installs (GPU Operator v26.7 GPUCluster, NVIDIA's DRA driver chart) and their capacity.

Inputs: ../shared/fixtures/real/gpu-operator/golden-dra/ (the operator's own golden renders
of the GPUCluster operands) and dra/rendered/ + dra/demo/specs/consumable-shares/. Applied
with kubectl to a simulator whose node runs the simulated DRA driver (it publishes the
slices); the simulator's own DeviceClasses are deleted first so the real ones are what the
cluster holds. Capacity cases build slices as the driver publishes them with
CONSUMABLE_SHARES and partitionable devices, and count from their shares and counters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.domain.dra_models import DraSummary
from app.domain.engine.build import build_snapshot
from tests import factories as f
from tests.domain import dra_worlds as w
from tests.real_inputs.harness import SimNode, applied_to, documents, real

GOLDEN = "gpu-operator/golden-dra"
CHART = "dra/rendered"


def dra_only(tmp_path: Path, file: str, namespace: str) -> dict[str, Any]:
    with applied_to(tmp_path, [SimNode("dra-1", dra=True)]) as cluster:
        cluster.kubectl("delete", "deviceclass", "--all")
        cluster.apply(real(file), namespace=namespace)
        snapshot = cluster.snapshot()
        dumped: dict[str, Any] = snapshot.model_dump(mode="json")
        return dumped


def test_dra_render_gpucluster_gpus_only_is_a_read_only_dra_only_install(
    tmp_path: Path,
) -> None:
    summary = dra_only(tmp_path, f"{GOLDEN}/gpucluster-dra-driver-gpus-only.yaml", "test-operator")
    assert summary["dra"]["install"] == {
        "daemonset": "test-operator/nvidia-dra-driver-kubelet-plugin",
        "managed_by": "gpu-operator",
        "device_classes": ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"],
        "extended_resources": [],  # GPUCluster's gpu.nvidia.com has no extendedResourceName
        "device_plugin": False,
    }
    assert summary["plugin"]["found"] is False
    codes = {finding["code"] for finding in summary["findings"]}
    assert "plugin-daemonset-missing" not in codes  # no plugin is the design, not a fault
    assert "dra-extended-resource-mapped" not in codes
    [node] = summary["nodes"]
    assert (node["allocation"], node["config"]) == ("dra", None)
    assert summary["dra"]["devices"] == 2


def test_dra_render_gpucluster_full_spec_is_found_by_its_kubelet_plugin(tmp_path: Path) -> None:
    summary = dra_only(tmp_path, f"{GOLDEN}/gpucluster-dra-driver-full-spec.yaml", "test-operator")
    install = summary["dra"]["install"]
    assert (install["managed_by"], install["device_plugin"]) == ("gpu-operator", False)


def test_dra_render_driver_chart_consumable_shares_is_a_helm_dra_install(tmp_path: Path) -> None:
    summary = dra_only(
        tmp_path, f"{CHART}/consumable-shares-4.k8s-1.36.yaml", "dra-driver-nvidia-gpu"
    )
    install = summary["dra"]["install"]
    assert install["daemonset"] == "dra-driver-nvidia-gpu/dra-driver-nvidia-gpu-kubelet-plugin"
    assert install["managed_by"] == "helm"
    assert install["extended_resources"] == ["nvidia.com/gpu"]


# capacity from shares and counters ------------------------------------------------------------


def consumable_shares() -> int:
    """CONSUMABLE_SHARES of the real rendered kubelet plugin (4)."""
    path = real(f"{CHART}/consumable-shares-4.k8s-1.36.yaml")
    for doc in documents(path):
        if doc.get("kind") != "DaemonSet":
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            for env in container.get("env") or []:
                if env["name"] == "CONSUMABLE_SHARES":
                    return int(env["value"])
    raise AssertionError("no CONSUMABLE_SHARES in the rendered DaemonSet")


def shared_gpu(shares: int) -> dict[str, Any]:
    """One GPU as the driver publishes it with --consumable-shares=N."""
    device = w.gpu_device(0)
    device["allowMultipleAllocations"] = True
    device["capacity"]["shares"] = {
        "value": str(shares),
        "requestPolicy": {"default": "1", "validRange": {"min": "1", "max": str(shares)}},
    }
    return device


def template_claims(count: int) -> list[dict[str, Any]]:
    """Claims made from the demo's `gpu-1share` template, each allocated one share of gpu-0."""
    spec = real("dra/demo/specs/consumable-shares/integer-sharing.yaml")
    template = next(d for d in documents(spec) if d["kind"] == "ResourceClaimTemplate")
    claims = []
    for index in range(count):
        claim = w.claim(f"integer-sharing-{index}-gpu", devices=["gpu-0"], reserved=[f"p{index}"])
        claim["spec"] = template["spec"]["spec"]
        result = claim["status"]["allocation"]["devices"]["results"][0]
        result.update({"shareID": f"share-{index}", "consumedCapacity": {"shares": "1"}})
        claims.append(claim)
    return claims


def summary_of(devices: list[dict[str, Any]], claims: list[dict[str, Any]]) -> DraSummary:
    state = w.dra_world(slices=[w.resource_slice(devices=devices)], claims=claims)
    return build_snapshot(state, options=f.OPTIONS, now=f.NOW).dra


def test_dra_capacity_consumable_shares_counted_from_the_slice_capacity() -> None:
    shares = consumable_shares()
    summary = summary_of([shared_gpu(shares)], template_claims(3))
    assert (summary.devices, summary.allocated, summary.shared) == (1, 1, 1)
    assert (summary.shares, summary.shares_allocated) == (4, 3)


def test_dra_capacity_consumable_shares_never_count_above_the_device_capacity() -> None:
    summary = summary_of([shared_gpu(consumable_shares())], template_claims(6))
    assert (summary.shares, summary.shares_allocated) == (4, 4)


def test_dra_capacity_partitionable_placements_of_one_gpu_count_once() -> None:
    """Dynamic MIG publishes the whole GPU and each placement, all on one counter set."""
    whole = w.gpu_device(0)
    placements = [w.mig_device(0, profile="1g.10gb", start=s) for s in (0, 1, 2)]
    for device in [whole, *placements]:
        device["consumesCounters"] = [{"counterSet": "gpu-0-counter-set", "counters": {}}]
    summary = summary_of([whole, *placements], [])
    assert (summary.devices, summary.free, summary.allocated) == (1, 1, 0)
    claimed = w.claim("mig-a", devices=[placements[0]["name"]], reserved=["p0"])
    summary = summary_of([whole, *placements], [claimed])
    assert (summary.devices, summary.free, summary.allocated) == (1, 0, 1)
