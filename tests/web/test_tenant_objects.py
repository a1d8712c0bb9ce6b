"""Objects a tenant writes through the API never stop, bloat or rewrite the dashboard (issue 33).

Each hostile object is created over HTTP at the (simulated) API server, as a tenant with
the right to create pods or DRA objects would. The snapshot must stay fresh (a later,
ordinary pod is counted), `/healthz` must answer, memory must not grow with the hostile
value, and a finding must name the object, the field and the value cut short.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import Stack

NODE = "gpu-server-1"
TENANT = "team-a"


def _pod(name: str, *, annotations: dict[str, str] | None = None, gpu: str | None = None) -> Any:
    resources = {"limits": {"nvidia.com/gpu": gpu}} if gpu is not None else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": TENANT, "annotations": annotations or {}},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "main", "image": "cuda:12", "resources": resources}],
        },
        "status": {"phase": "Running"},
    }


def _create(stack: Stack, path: str, body: Any) -> None:
    """POST `body` to the API server at `path` (a tenant's kubectl create)."""
    url = f"{stack.simulator.url}{path}"
    response = httpx.post(url, json=body, timeout=10)
    assert response.status_code == 201, response.text


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * 4096 / 2**20


def _set_aside(stack: Stack, obj: str) -> dict[str, Any] | None:
    findings = stack.client.get("/api/v1/findings").json()["findings"]
    return next(
        (f for f in findings if f["code"] == "object-set-aside" and f["evidence"]["object"] == obj),
        None,
    )


def _still_fresh(stack: Stack, name: str) -> None:
    """An ordinary pod created after the hostile one is counted: the snapshot is fresh."""
    before = stack.summary()["totals"]["requested"]  # type: ignore[index]
    _create(stack, f"/api/v1/namespaces/{TENANT}/pods", _pod(name, gpu="1"))
    stack.wait(
        lambda: stack.summary()["totals"]["requested"] == before + 1,  # type: ignore[index]
        what="the ordinary pod to be counted",
    )
    summary = stack.summary()
    assert summary["stale"] is False
    started = time.monotonic()
    assert stack.client.get("/healthz").status_code == 200
    assert time.monotonic() - started < 2.0  # generous: a frozen loop took 7-12 s


@pytest.fixture
def tenant(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("host-split")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 4,  # type: ignore[index]
        what="agent report of gpu-server-1",
    )
    _create(
        stack,
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TENANT}},
    )
    return stack


HOSTILE_PODS = [
    ("memory-digits", {"gpu-memory": "9" * 5000}, None, "metadata.annotations.gpu-memory"),
    ("memory-superscript", {"gpu-memory": "²"}, None, "metadata.annotations.gpu-memory"),
    (
        "devices-digits",
        {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "9" * 5000},
        None,
        "metadata.annotations.gpu-fraction-num-devices",
    ),
    ("request-digits", {}, "9" * 60, "resources.nvidia.com/gpu"),
]


@pytest.mark.parametrize(("name", "annotations", "gpu", "field"), HOSTILE_PODS)
def test_hostile_pod_is_set_aside_named_and_the_snapshot_stays_fresh(
    tenant: Stack, name: str, annotations: dict[str, str], gpu: str | None, field: str
) -> None:
    rss = _rss_mib()
    _create(
        tenant, f"/api/v1/namespaces/{TENANT}/pods", _pod(name, annotations=annotations, gpu=gpu)
    )
    found = tenant.wait(lambda: _set_aside(tenant, f"Pod {TENANT}/{name}"), what="finding")
    assert isinstance(found, dict)
    assert found["evidence"]["field"] == field
    assert len(found["evidence"]["value"]) < 80  # cut short, never 5,000 characters
    assert f"-n {TENANT} get pod {name}" in found["remedy"]
    _still_fresh(tenant, f"ordinary-{name}")
    assert _rss_mib() - rss < 150  # generous: one such pod cost +308 MB per build


def test_a_fraction_of_900000_gpus_is_capped_at_the_gpus_of_the_node(tenant: Stack) -> None:
    # (20,000,000 is past MAX_COUNT and set aside; below it the share is capped)
    rss = _rss_mib()
    annotations = {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "900000"}
    _create(tenant, f"/api/v1/namespaces/{TENANT}/pods", _pod("greedy", annotations=annotations))

    def share() -> float | None:
        node = tenant.client.get(f"/api/v1/nodes/{NODE}").json()["node"]
        pod = next((p for p in node["pods"] if p["pod"] == f"{TENANT}/greedy"), None)
        return pod["share"] if pod is not None else None

    got = tenant.wait(share, what="the fraction pod")
    assert isinstance(got, float) and got <= 4  # the node holds four GPUs, not 10,000,000
    _still_fresh(tenant, "ordinary")
    assert _rss_mib() - rss < 150


@pytest.fixture
def dra(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("dra")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 10,  # type: ignore[index]
        what="agent reports of the three nodes",
    )
    return stack


def _slice(name: str, capacity: dict[str, Any]) -> Any:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "dra-a100-1",
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": "gpu-9",
                    "allowMultipleAllocations": True,
                    "attributes": {
                        "type": {"string": "gpu"},
                        "uuid": {"string": "GPU-hostile-0000"},
                    },
                    "capacity": capacity,
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("name", "capacity", "field"),
    [
        ("digits", {"memory": {"value": "9" * 400}}, "spec.devices[gpu-9].capacity.memory"),
        ("negative", {"shares": {"value": "-5"}}, "spec.devices[gpu-9].capacity.shares"),
    ],
)
def test_hostile_resource_slice_is_set_aside_and_totals_stay_true(
    dra: Stack, name: str, capacity: dict[str, Any], field: str
) -> None:
    before = dra.summary()["dra"]
    _create(dra, "/apis/resource.k8s.io/v1/resourceslices", _slice(f"hostile-{name}", capacity))
    found = dra.wait(lambda: _set_aside(dra, f"ResourceSlice hostile-{name}"), what="finding")
    assert isinstance(found, dict) and found["evidence"]["field"] == field
    after = dra.summary()
    assert after["stale"] is False
    assert after["dra"] == before  # the slice counts for nothing, never -5 shares
    started = time.monotonic()
    assert dra.client.get("/healthz").status_code == 200
    assert time.monotonic() - started < 2.0


def test_findings_come_a_page_at_a_time_with_the_total(tenant: Stack) -> None:
    for n in range(3):
        _create(
            tenant,
            f"/api/v1/namespaces/{TENANT}/pods",
            _pod(f"odd-{n}", annotations={"gpu-memory": "²"}),
        )
    tenant.wait(lambda: _set_aside(tenant, f"Pod {TENANT}/odd-2"), what="the third finding")

    def paged() -> bool:  # the same snapshot before and after the page (builds go on)
        everything = tenant.client.get("/api/v1/findings").json()
        page = tenant.client.get("/api/v1/findings", params={"limit": 2, "offset": 1}).json()
        again = tenant.client.get("/api/v1/findings").json()
        if everything["generated_at"] != again["generated_at"]:
            return False
        assert page["total"] == everything["total"] == len(everything["findings"]) >= 3
        assert page["findings"] == everything["findings"][1:3]
        return True

    tenant.wait(paged, what="a page of one snapshot")
    assert tenant.client.get("/api/v1/findings", params={"limit": 10**6}).status_code == 422


def test_a_gpu_with_thousands_of_dra_devices_draws_counts_not_cells(dra: Stack) -> None:
    """A driver publishing every MIG placement (7,560 devices) made a 20 MB node page."""
    node = dra.client.get("/api/v1/nodes/dra-a100-1").json()["node"]
    parent = node["gpus"][0]["uuid"]
    devices = [
        {
            "name": f"gpu-0-mig-{n}",
            "attributes": {
                "type": {"string": "mig"},
                "uuid": {"string": f"MIG-{n:08x}-0000-0000-0000-000000000000"},
                "parentUUID": {"string": parent},
                "profile": {"string": "1g.10gb"},
            },
        }
        for n in range(2000)
    ]
    body = _slice("placements", {})
    body["spec"]["devices"] = devices
    _create(dra, "/apis/resource.k8s.io/v1/resourceslices", body)

    def counted() -> str | None:
        page = dra.client.get("/nodes/dra-a100-1")
        return page.text if 'data-testid="dra-device-count"' in page.text else None

    text = dra.wait(counted, what="the counted DRA devices")
    assert isinstance(text, str)
    assert len(text.encode()) < 1_000_000
    assert text.count('data-testid="dra-device-cell"') < 200
    assert dra.summary()["stale"] is False


@pytest.fixture
def sliced(make_stack: Callable[..., Stack]) -> Stack:
    stack = make_stack("time-slicing")
    stack.wait(
        lambda: stack.summary()["totals"]["physical_gpus"] == 10,  # type: ignore[index]
        what="agent reports of the three nodes",
    )
    return stack


def _put_config(stack: Stack, text: str) -> None:
    """Whoever may write the plugin's ConfigMap (a namespace admin, a CI job) replaces it."""
    path = "/api/v1/namespaces/kube-system/configmaps/nvidia-device-plugin-config"
    url = f"{stack.simulator.url}{path}"
    current = httpx.get(url, timeout=10).json()
    current["data"] = {"config.yaml": text}
    answer = httpx.put(url, json=current, timeout=10)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: " + "[" * 1500 + "]" * 1500, "plugin-config-rejected"),
        (
            "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            "    - name: nvidia.com/gpu\n      replicas: 100000\n",
            None,
        ),
    ],
    ids=["deep-yaml", "replicas-100000"],
)
def test_a_hostile_plugin_config_never_stops_the_dashboard(
    sliced: Stack, text: str, expected: str | None
) -> None:
    rss = _rss_mib()
    _put_config(sliced, text)

    def seen() -> bool:
        codes = {f["code"] for f in sliced.client.get("/api/v1/findings").json()["findings"]}
        nodes = sliced.client.get("/api/v1/nodes").json()["nodes"]
        if expected is not None:
            return expected in codes
        return any(n.get("expected_slots") == 400_000 for n in nodes)

    sliced.wait(seen, timeout_s=20, what="the new config read")
    assert sliced.summary()["stale"] is False
    page = sliced.client.get("/")
    assert page.status_code == 200 and len(page.content) < 2_000_000
    started = time.monotonic()
    assert sliced.client.get("/healthz").status_code == 200
    assert time.monotonic() - started < 2.0
    assert _rss_mib() - rss < 200  # +888 MB before
