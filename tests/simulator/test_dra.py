"""The simulated DRA driver and scheduler, through kubectl and the real client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client
from urllib3 import BaseHTTPResponse

from app.simulator.apiserver.resources import RESOURCECLAIM
from app.simulator.world.cluster import SimulatedCluster
from tests.simulator.conftest import api_client

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

CLAIM_AND_POD = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: extra, namespace: ml}
spec:
  devices:
    requests:
      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}
---
apiVersion: v1
kind: Pod
metadata: {name: extra-0, namespace: ml}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: extra}]
  containers:
    - {name: main, image: "cuda:12", resources: {claims: [{name: gpu}]}}
"""


@pytest.fixture(scope="module")
def simulate_dra() -> Iterator[str]:
    """`gpu-slots simulate --scenario dra` as its own process; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "simulate", "--port", "0", "--scenario", "dra"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    line = process.stdout.readline()
    url = next(word for word in line.split() if word.startswith("http://"))
    assert process.stdout.readline() == (
        "DRA nodes (gpu.nvidia.com): dra-a100-1, dra-mig-2  "
        f"(kubectl --server={url} get resourceslices,resourceclaims,deviceclasses -A)\n"
    )
    yield url
    process.terminate()
    process.wait(timeout=10)
    process.stdout.close()
    process.stderr.close()


def _rows(output: str) -> list[list[str]]:
    """Each printed row without its AGE column (the last)."""
    return [line.split()[:-1] for line in output.splitlines() if line.strip()]


def test_done_when_kubectl_get_resourceslices_resourceclaims_deviceclasses(
    simulate_dra: str, kubectl: Kubectl
) -> None:
    out = kubectl(simulate_dra, "get", "resourceslices,resourceclaims,deviceclasses").stdout
    assert _rows(out) == [
        ["NAME", "NODE", "DRIVER", "POOL"],
        [
            "resourceslice.resource.k8s.io/dra-a100-1-gpu.nvidia.com",
            "dra-a100-1",
            "gpu.nvidia.com",
            "dra-a100-1",
        ],
        [
            "resourceslice.resource.k8s.io/dra-mig-2-gpu.nvidia.com",
            "dra-mig-2",
            "gpu.nvidia.com",
            "dra-mig-2",
        ],
        ["NAME"],
        ["deviceclass.resource.k8s.io/gpu.nvidia.com"],
        ["deviceclass.resource.k8s.io/mig.nvidia.com"],
    ]  # no claims in the default namespace
    claims = _rows(kubectl(simulate_dra, "get", "resourceclaims", "-n", "ml").stdout)
    states = {row[0]: row[1] for row in claims[1:]}
    assert claims[0] == ["NAME", "STATE"]
    assert {k: v for k, v in states.items() if not k.startswith(("train-0-", "embed-0-"))} == {
        "eight-gpus": "pending",
        "mig-slice": "allocated,reserved",
        "shared-mps": "allocated,reserved",
        "shared-ts": "allocated,reserved",
    }
    generated = sorted(
        k.rsplit("-", 1)[0] for k in states if k.startswith(("train-0-", "embed-0-"))
    )
    assert generated == ["embed-0-extended-resources", "train-0-gpu"]


def test_kubectl_created_claim_and_pod_are_allocated_and_bound(
    simulate_dra: str, kubectl: Kubectl, tmp_path: Path
) -> None:
    manifest = tmp_path / "claim.yaml"
    manifest.write_text(CLAIM_AND_POD)
    kubectl(simulate_dra, "create", "-f", str(manifest), "--validate=false")
    pod = kubectl(
        simulate_dra,
        "-n",
        "ml",
        "get",
        "pod",
        "extra-0",
        "-o",
        "jsonpath={.spec.nodeName} {.status.phase} {.status.resourceClaimStatuses}",
    ).stdout
    assert pod == "dra-mig-2 Running "  # a claim by name: no generated-claim status
    claim = kubectl(
        simulate_dra,
        "-n",
        "ml",
        "get",
        "resourceclaim",
        "extra",
        "-o",
        "jsonpath={.status.allocation.devices.results[0].device} {.status.reservedFor[0].name}",
    ).stdout
    assert claim == "gpu-0 extra-0"


def _claim(sim: SimulatedCluster, name: str) -> dict[str, Any]:
    entry = sim.store.get(RESOURCECLAIM, "ml", name)
    assert entry is not None
    return entry.obj


def test_slice_publishes_gpus_and_mig_devices_like_nvidias_driver() -> None:
    sim = SimulatedCluster("dra")
    url = sim.start()
    try:
        with api_client(url) as api:
            slices = client.ResourceV1Api(api).list_resource_slice(
                field_selector="spec.nodeName=dra-mig-2", _preload_content=False
            )
            # not preloaded: urllib3's answer, whatever the client's hints say
            (only,) = json.loads(cast(BaseHTTPResponse, slices).data)["items"]
    finally:
        sim.stop()
    devices = only["spec"]["devices"]
    assert [d["name"] for d in devices] == ["gpu-0", "gpu-1-mig-9-0-4", "gpu-1-mig-9-4-4"]
    mig = devices[1]
    gpu1 = sim.inventories["dra-mig-2"].gpus[1].uuid
    assert {k: next(iter(v.values())) for k, v in mig["attributes"].items()} | {"uuid": "-"} == {
        "type": "mig",
        "uuid": "-",
        "parentUUID": gpu1,
        "profile": "3g.40gb",
        "productName": "NVIDIA A100-SXM4-80GB",
        "driverVersion": "580.65.6",
        "cudaComputeCapability": "8.0.0",
    }
    assert mig["attributes"]["uuid"]["string"].startswith("MIG-")
    assert mig["capacity"] == {"memory": {"value": "40576Mi"}}
    agent_migs = sim.report("dra-mig-2").gpus[1].mig_devices  # type: ignore[union-attr]
    assert mig["attributes"]["uuid"]["string"] == agent_migs[0].uuid  # the agent's MIG UUID
    assert devices[0]["capacity"] == {"memory": {"value": "80Gi"}}
    assert only["spec"]["pool"] == {"name": "dra-mig-2", "generation": 1, "resourceSliceCount": 1}


def test_auto_created_claim_for_a_plain_gpu_request() -> None:
    sim = SimulatedCluster("dra")
    pod = sim.get("Pod", "embed-0", "ml")
    assert pod is not None
    status = pod["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"] == [
        {
            "containerName": "embed",
            "resourceName": "nvidia.com/gpu",
            "requestName": "container-0-request-0",
        }
    ]
    claim = _claim(sim, status["resourceClaimName"])
    assert claim["metadata"]["annotations"] == {
        "resource.kubernetes.io/extended-resource-claim": "true"
    }
    assert claim["metadata"]["ownerReferences"][0]["name"] == "embed-0"
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-0",
            "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1},
        }
    ]
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-3"]
    sim.delete_pod("ml", "embed-0")
    assert sim.store.get(RESOURCECLAIM, "ml", status["resourceClaimName"]) is None


def test_shared_claim_keeps_config_and_is_released_pod_by_pod() -> None:
    sim = SimulatedCluster("dra")
    claim = _claim(sim, "shared-ts")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["notebook-a", "notebook-b"]
    config = claim["status"]["allocation"]["devices"]["config"]
    assert [(c["source"], c["opaque"]["parameters"]["sharing"]["strategy"]) for c in config] == [
        ("FromClaim", "TimeSlicing")
    ]
    sim.delete_pod("ml", "notebook-a")
    assert [r["name"] for r in _claim(sim, "shared-ts")["status"]["reservedFor"]] == ["notebook-b"]
    sim.delete_pod("ml", "notebook-b")
    assert _claim(sim, "shared-ts")["status"] == {}  # nobody reserves it: deallocated


def _claim_pod(name: str, ref: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "resourceClaims": [{"name": "gpu", **ref}],
            "containers": [{"name": "main", "image": "cuda:12"}],
        },
    }


def test_pod_waits_for_a_device_and_gets_the_one_freed() -> None:
    sim = SimulatedCluster("dra")
    for name, device_class in (("a", "gpu.nvidia.com"), ("b", "mig.nvidia.com")):
        request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
        body = {"metadata": {"name": f"claim-{name}"}, "spec": {"devices": {"requests": [request]}}}
        sim.registry.create(RESOURCECLAIM, "ml", body)
        sim.create_pod(_claim_pod(name, {"resourceClaimName": f"claim-{name}"}))
    # The two free devices (dra-mig-2 gpu-0 and a MIG device) are taken now.
    assert [sim.get("Pod", n, "ml")["spec"].get("nodeName") for n in "ab"] == [  # type: ignore[index]
        "dra-mig-2",
        "dra-mig-2",
    ]
    sim.create_pod(_claim_pod("c", {"resourceClaimTemplateName": "one-gpu"}))
    waiting = sim.get("Pod", "c", "ml")
    assert waiting is not None
    assert (waiting["spec"].get("nodeName"), waiting["status"]["phase"]) == (None, "Pending")
    sim.delete_pod("ml", "train-0")  # frees dra-a100-1 gpu-0
    pod = sim.get("Pod", "c", "ml")
    assert pod is not None
    assert (pod["spec"]["nodeName"], pod["status"]["phase"]) == ("dra-a100-1", "Running")
    (claim_status,) = pod["status"]["resourceClaimStatuses"]
    assert claim_status["name"] == "gpu"
    claim = _claim(sim, claim_status["resourceClaimName"])
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
