"""`POST /api/v1/fit` and the page `/fit` on the demo: literal verdicts, reasons, GPUs, refusals.

The demo holds still (no workload steps), so every figure is known: gpu-server-1 has one free
slot on GPU 3, gpu-server-4 none, gpu-server-6 is cordoned, gpu-ts-7 time-slices 4 L40S x4,
gpu-mig-8 has MIG 1g.10gb and 3g.40gb devices, gpu-dra-9 serves nvidia.com/gpu through DRA
with one whole GPU free, gpu-ws-5's plugin crash-loops (nothing advertised).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from app.simulator.world.cluster import SimulatedCluster
from app.web.server import build_app
from tests.conftest import ADMIN_TOKEN, AGENT_TOKEN, Stack, stack_settings
from tests.live import LiveServer, wait_for
from tests.web.fakes import app_with_world

BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

GPU_NODES = [
    "gpu-dra-9",
    "gpu-mig-8",
    "gpu-server-1",
    "gpu-server-2",
    "gpu-server-3",
    "gpu-server-4",
    "gpu-server-6",
    "gpu-ts-7",
    "gpu-ws-5",
]


@pytest.fixture(scope="module")
def demo() -> Iterator[Stack]:
    simulator = SimulatedCluster("demo")
    # hold still: the verdicts are compared literally (the timeline copied the scenario's
    # steps when the simulator was made, so they are emptied there)
    simulator.timeline.steps = []
    url = simulator.start(host="127.0.0.1", port=0)
    settings = stack_settings(plugin_config_namespaces=simulator.scenario.daemonset_namespaces())
    app = build_app(settings, kube_server=url, refresh_interval_s=0.5)
    server = LiveServer(app)
    dashboard = server.start()
    simulator.configure_agents(report_to=dashboard, token=AGENT_TOKEN, interval_s=0.5)
    client = httpx.Client(base_url=dashboard, timeout=10)
    wait_for(
        lambda: all(
            (n.get("agent") or {}).get("fresh")
            for n in client.get("/api/v1/nodes").json().get("nodes") or [{}]
        ),
        timeout_s=30,
        what="every agent fresh",
    )
    # and every plugin registered: 26 nvidia.com/gpu slots (gpu-ts-7's 16 among them)
    wait_for(
        lambda: (
            client.get("/api/v1/summary")
            .json()["resources"]
            .get("nvidia.com/gpu", {})
            .get("allocatable")
            == 26
        ),
        timeout_s=30,
        what="every plugin's slots advertised",
    )
    yield Stack(simulator=simulator, app=app, dashboard_url=dashboard, client=client)
    client.close()
    server.stop()
    simulator.stop()


def _pod(count: Any = 1, *, resource: str = "nvidia.com/gpu", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "ask", "namespace": "ml"},
        "spec": {
            "containers": [
                {"name": "main", "image": "cuda", "resources": {"limits": {resource: count}}}
            ],
            **spec,
        },
    }


def _ask(stack: Stack, manifest: Any, *, yaml_body: bool = False, **kwargs: Any) -> httpx.Response:
    if yaml_body:
        content = manifest if isinstance(manifest, str) else yaml.safe_dump(manifest)
        headers = {"Content-Type": "application/yaml", **kwargs.pop("headers", {})}
        return stack.client.post("/api/v1/fit", content=content, headers=headers, **kwargs)
    return stack.client.post("/api/v1/fit", json=manifest, **kwargs)


def _by_node(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in body["nodes"]}


def test_fit_one_gpu_lists_every_gpu_node_with_verdicts_reasons_and_gpus(demo: Stack) -> None:
    answer = _ask(demo, _pod(1))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["fits"] is True
    assert [n["node"] for n in body["nodes"]] == GPU_NODES
    nodes = _by_node(body)
    assert nodes["gpu-server-1"] == {
        "node": "gpu-server-1",
        "fits": True,
        "reasons": [],
        "gpus": ["GPU-e8f0a2b4-3c5d-4e7f-8a9b-4c6d8e0f2a83"],
    }
    assert nodes["gpu-server-6"]["reasons"] == [{"code": "cordoned", "params": {}}]
    assert nodes["gpu-server-4"]["reasons"] == [
        {
            "code": "insufficient",
            "params": {"resource": "nvidia.com/gpu", "requested": 1, "free": 0, "allocatable": 1},
        }
    ]
    assert nodes["gpu-ws-5"]["reasons"][0]["params"]["allocatable"] == 0
    # DRA: the driver's extended resource is served by gpu-dra-9's one unclaimed whole GPU
    assert nodes["gpu-dra-9"]["fits"] is True and len(nodes["gpu-dra-9"]["gpus"]) == 1
    fitting = sorted(n for n, v in nodes.items() if v["fits"])
    assert fitting == [
        "gpu-dra-9",
        "gpu-mig-8",
        "gpu-server-1",
        "gpu-server-2",
        "gpu-server-3",
        "gpu-ts-7",
    ]


def test_fit_yaml_mig_profile_fits_only_where_its_devices_are_free(demo: Stack) -> None:
    answer = _ask(demo, _pod("2", resource="nvidia.com/mig-3g.40gb"), yaml_body=True)
    assert answer.status_code == 200, answer.text
    nodes = _by_node(answer.json())
    assert nodes["gpu-mig-8"]["fits"] is True
    assert len(nodes["gpu-mig-8"]["gpus"]) == 2 and all(
        g.startswith("MIG-") for g in nodes["gpu-mig-8"]["gpus"]
    )
    assert nodes["gpu-server-1"]["reasons"] == [
        {"code": "mig-profile-absent", "params": {"resource": "nvidia.com/mig-3g.40gb"}}
    ]
    three = _by_node(_ask(demo, _pod(3, resource="nvidia.com/mig-3g.40gb")).json())
    assert three["gpu-mig-8"]["reasons"] == [
        {
            "code": "mig-profile-held",
            "params": {
                "resource": "nvidia.com/mig-3g.40gb",
                "requested": 3,
                "free": 2,
                "allocatable": 2,
            },
        }
    ]


def test_fit_a_deployment_asks_its_template_and_selectors_apply(demo: Stack) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"template": {"spec": _pod(2, nodeSelector={"gpu-pool": "shared"})["spec"]}},
    }
    nodes = _by_node(_ask(demo, deployment).json())
    assert sorted(n for n, v in nodes.items() if v["fits"]) == ["gpu-ts-7"]
    assert nodes["gpu-server-2"]["reasons"][0] == {
        "code": "node-selector",
        "params": {"key": "gpu-pool", "wanted": "shared", "found": None},
    }
    # time-slicing without failRequestsGreaterThanOne: two replicas, spread (distributed)
    assert len(nodes["gpu-ts-7"]["gpus"]) == 2


@pytest.mark.parametrize(
    ("body", "lang", "expected"),
    [
        ("kind: Pod\n---\nkind: Pod\n", "en", "The body holds 2 documents; send one manifest."),
        (
            "kind: Pod\n---\nkind: Pod\n",
            "ko",
            "본문에 문서가 2개 있습니다. 매니페스트 하나만 보내세요.",
        ),
        ("{not: [yaml", "en", "The body is neither YAML nor JSON: "),
        ("kind: Service\nspec: {}\n", "en", "kind Service has no pod to ask about"),
        (
            yaml.safe_dump(_pod(-1)),
            "en",
            "spec.containers[0].resources.limits.nvidia.com/gpu: -1 is negative.",
        ),
        (yaml.safe_dump(_pod("1.5")), "en", "1.5 is not a whole number of GPUs."),
        (
            yaml.safe_dump(_pod(1, resource="nvidia.com/gpus")),
            "en",
            "No node knows the resource nvidia.com/gpus.",
        ),
        (
            yaml.safe_dump(_pod(1, resourceClaims=[{"name": "gpu"}])),
            "en",
            "spec.resourceClaims: DRA claims a pod names itself are not judged yet",
        ),
        (
            yaml.safe_dump(_pod(1, resource="nvidia.com/gpus")),
            "ko",
            "리소스 nvidia.com/gpus를 아는 노드가 없습니다.",
        ),
    ],
)
def test_fit_bad_bodies_are_422_in_the_callers_language(
    demo: Stack, body: str, lang: str, expected: str
) -> None:
    answer = _ask(demo, body, yaml_body=True, headers={"Accept-Language": lang})
    assert answer.status_code == 422
    assert expected in answer.json()["detail"]


def test_fit_costs_the_api_server_nothing_and_a_body_over_one_mib_is_413(demo: Stack) -> None:
    demo.simulator.reset_request_counts()
    assert _ask(demo, _pod(1)).status_code == 200
    assert demo.client.get("/fit", params={"resource": "nvidia.com/gpu"}).status_code == 200
    big = "# " + "x" * (1024 * 1024) + "\n" + yaml.safe_dump(_pod(1))
    answer = _ask(demo, big, yaml_body=True)
    assert answer.status_code == 413
    # the check reads the published snapshot: not one request reached the API server
    assert demo.simulator.request_count() == 0, demo.simulator.request_counts()


def test_fit_json_body_with_json_content_type_is_strict_json(demo: Stack) -> None:
    answer = demo.client.post(
        "/api/v1/fit",
        content=json.dumps(_pod(1)).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 200 and answer.json()["fits"] is True
    refused = demo.client.post(
        "/api/v1/fit", content=b"kind: Pod", headers={"Content-Type": "application/json"}
    )
    assert refused.status_code == 422


def test_fit_page_answers_in_both_languages_with_the_form_and_a_pasted_manifest(
    demo: Stack,
) -> None:
    for lang, heading in (("en", "Will it fit?"), ("ko", "배치 확인")):
        page = demo.client.get(f"/fit?lang={lang}")
        assert page.status_code == 200 and heading in page.text
    asked = demo.client.get(
        "/fit", params={"resource": "nvidia.com/gpu", "count": "2", "lang": "en"}
    )
    assert asked.status_code == 200
    assert 'data-testid="fit-answer" data-fits="true"' in asked.text
    assert 'data-node="gpu-ts-7" data-fits="true"' in asked.text
    assert "Insufficient nvidia.com/gpu: asks 2, 1 free of 2" in asked.text
    one = demo.client.get("/fit", params={"resource": "nvidia.com/gpu", "lang": "en"}).text
    # gpu-server-3's free slot is GPU 3, whose memory a host process mostly holds
    assert "GPU 3 (NVIDIA H100 80GB HBM3): 77.0 of 79.6 GiB in use by others" in one
    pasted = demo.client.post(
        "/fit?lang=ko",
        data={"manifest": yaml.safe_dump(_pod(1, resource="nvidia.com/mig-1g.10gb"))},
    )
    assert pasted.status_code == 200
    assert 'data-node="gpu-mig-8" data-fits="true"' in pasted.text
    assert "이 노드에 nvidia.com/mig-1g.10gb MIG 장치가 없습니다" in pasted.text
    bad = demo.client.get("/fit", params={"resource": "nvidia.com/gpu", "count": "-2"})
    assert bad.status_code == 422 and "count: -2 is not a whole number from 1 to" in bad.text


def test_fit_takes_the_rights_of_a_read_with_reads_closed() -> None:
    with TestClient(app_with_world(public_reads=False)) as client:
        assert client.post("/api/v1/fit", json=_pod(1)).status_code == 401
        assert client.post("/fit", data={"manifest": "kind: Pod"}).status_code == 401
        answer = client.post("/api/v1/fit", json=_pod(1), headers=BEARER)
        assert answer.status_code == 200, answer.text
        assert [(n["node"], n["fits"]) for n in answer.json()["nodes"]] == [("gpu-1", True)]


def test_fit_anonymous_question_with_reads_open_is_not_taken_for_a_write() -> None:
    with TestClient(app_with_world()) as client:
        answer = client.post("/api/v1/fit", json=_pod(5))
        assert answer.status_code == 200, answer.text
        assert answer.json()["nodes"][0]["reasons"][0]["code"] == "insufficient"


def test_fit_a_namespace_quota_used_up_refuses_everywhere(demo: Stack) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": "research"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "1"}},
    }
    made = httpx.post(
        f"{demo.simulator.url}/api/v1/namespaces/research/resourcequotas", json=quota, timeout=10
    )
    assert made.status_code == 201, made.text
    asked = {**_pod(2), "metadata": {"name": "ask", "namespace": "research"}}

    def refused() -> dict[str, Any] | None:
        body: dict[str, Any] = _ask(demo, asked).json()
        return body if not body["fits"] else None

    body = wait_for(refused, timeout_s=10, what="the quota in the dashboard's cache")
    reason = {
        "code": "quota-exhausted",
        "params": {
            "quota": "gpus",
            "resource": "nvidia.com/gpu",
            "requested": 2,
            "used": 0,
            "hard": 1,
        },
    }
    assert all(n["reasons"][0] == reason for n in body["nodes"])
    assert _ask(demo, _pod(2)).json()["fits"] is True  # namespace ml has no quota
    page = demo.client.get(
        "/fit", params={"resource": "nvidia.com/gpu", "count": "2", "namespace": "research"}
    )
    assert "ResourceQuota gpus on requests.nvidia.com/gpu: 0 of 1 used, asks 2" in page.text


def test_fit_pending_demand_links_to_the_same_question(demo: Stack) -> None:
    pending = {**_pod(40), "metadata": {"name": "too-big", "namespace": "research"}}
    made = httpx.post(
        f"{demo.simulator.url}/api/v1/namespaces/research/pods", json=pending, timeout=10
    )
    assert made.status_code == 201, made.text
    link = 'href="/fit?resource=nvidia.com/gpu&amp;count=40&amp;lang=en"'
    page = wait_for(
        lambda: text if link in (text := demo.client.get("/?lang=en").text) else None,
        timeout_s=10,
        what="the pending demand's link on the overview",
    )
    assert 'data-testid="pending-fit-link"' in page
    linked = demo.client.get("/fit?resource=nvidia.com/gpu&count=40&lang=en")
    assert 'data-testid="fit-answer" data-fits="false"' in linked.text
