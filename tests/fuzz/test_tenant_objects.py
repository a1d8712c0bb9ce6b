"""Hostile objects of every kind a tenant may write, generated and created in the simulator
(issue 48): pods bound and pending, their requests and annotations, DRA claims and slices,
and change-history records. After each one the next snapshot builds and is fresh, the
pages and APIs that show it answer 2xx, and /healthz answers within a second; once all
are in, every page and API of the dashboard answers 2xx or a documented 4xx.
TENANT_EXAMPLES objects of each kind (tests/fuzz/watch.py).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Stack
from tests.fuzz.watch import (
    ADMIN,
    TENANT_EXAMPLES,
    fuzz_settings,
    healthz_s,
    held_response,
    live_stack,
    shown_fresh,
    timed,
)
from tests.web.test_admin_pages_i18n import log_in

TENANT = "fuzz"
NODES = ["gpu-server-1", "gpu-mig-8", "gpu-dra-9", "no-such-node"]
_names = itertools.count()

# Numbers as a stranger writes them: huge, negative, fractional, exponents, suffixes.
QUANTITIES = st.one_of(
    st.sampled_from(
        ["1Ei", "99999999999999999999", "-1", "0.5", "1e3", "1e400", "2k", "1000m", "0x10"]
    ),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
    st.from_regex(r"\A[0-9]{1,40}(\.[0-9]{1,5})?(e[0-9]{1,3})?(m|k|M|G|Ki|Mi|Gi|Ei)?\Z"),
)
# Text as a stranger writes it: control characters, markup, 64 KiB.
TEXTS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["<script>alert(1)</script>", "\x00\x1b[31m", "{{7*7}}", "²", "Ⅻ", "-0"]),
    st.integers(min_value=1, max_value=65_536).map(lambda n: "9" * n),
    st.just("a" * 65_536),
)
ANNOTATION_KEYS = st.sampled_from(
    [
        "gpu-fraction",
        "gpu-memory",
        "gpu-fraction-num-devices",
        "run.ai/reserve_for_gpu_index",
        "nvidia.com/container.main.gpu-memory.request",
    ]
)


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with live_stack("demo") as live:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TENANT}}
        httpx.post(f"{live.simulator.url}/api/v1/namespaces", json=namespace, timeout=10)
        yield live


def _name(kind: str) -> str:
    return f"{kind}-{next(_names)}"


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    resources = draw(
        st.dictionaries(
            st.sampled_from(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"]),
            QUANTITIES,
            max_size=2,
        )
    )
    where = draw(st.sampled_from(["limits", "requests"]))
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "cuda:12",
                "resources": {where: resources},
                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": draw(TEXTS)}],
            }
        ]
    }
    node = draw(st.sampled_from([*NODES, None]))
    if node is not None:
        spec["nodeName"] = node
    annotations = draw(st.dictionaries(ANNOTATION_KEYS, TEXTS, max_size=2))
    labels = draw(
        st.dictionaries(
            st.sampled_from(["user", "owner", "runai-gpu-group"]),
            st.from_regex(r"\A[a-z0-9]{1,20}\Z"),
            max_size=2,
        )
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": _name("pod"), "annotations": annotations, "labels": labels},
        "spec": spec,
        "status": {"phase": draw(st.sampled_from(["Running", "Pending", "Failed"]))},
    }


@st.composite
def claims(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.one_of(st.integers(min_value=-5, max_value=10**9), st.just(2**62)))
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": _name("claim")},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": draw(st.sampled_from(["gpu.nvidia.com", "x"])),
                            "allocationMode": draw(st.sampled_from(["ExactCount", "All"])),
                            "count": count,
                        },
                    }
                ]
            }
        },
    }


@st.composite
def slices(draw: st.DrawFn) -> dict[str, Any]:
    name = _name("slice")
    capacity = draw(
        st.dictionaries(
            st.sampled_from(["memory", "shares", "multiprocessors"]),
            QUANTITIES.map(lambda q: {"value": q}),
            max_size=2,
        )
    )
    device = {
        "name": "gpu-9",
        "attributes": {
            "type": {"string": draw(st.sampled_from(["gpu", "mig", "<b>"]))},
            "uuid": {"string": draw(TEXTS.filter(lambda t: len(t) < 1000))},
            "index": {"int": draw(st.integers(min_value=-(2**63), max_value=2**63 - 1))},
        },
        "capacity": capacity,
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": draw(st.sampled_from(NODES)),
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [device],
        },
    }


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXTS)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner),
        max_leaves=20,
    )


def _deep(change: str) -> st.SearchStrategy[str]:
    """A record whose `before` nests 17 to 50,000 levels deep (past every JSON bound)."""
    return st.integers(min_value=17, max_value=50_000).map(
        lambda n: (
            json.dumps({"id": change, "kind": "mode"})[:-1]
            + ', "before": '
            + "[" * n
            + "]" * n
            + "}"
        )
    )


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """A change record as anyone who may create ConfigMaps in the history's namespace
    writes one: well formed around hostile values."""
    change = _name("record")
    kind = draw(st.sampled_from(["mode", "split"]))
    side = st.dictionaries(
        st.sampled_from(["mode", "replicas", "kubernetes_gpus", "own", "config_key", "error"]),
        _json_values(),
        max_size=4,
    )
    record = {
        "id": change,
        "kind": kind,
        "action": draw(st.sampled_from(["change", "rollback"])),
        "at": "2026-01-01T00:00:00Z",
        "user": draw(TEXTS),
        "summary": draw(TEXTS),
        "node": draw(st.sampled_from([*NODES, None])),
        "before": draw(side),
        "after": draw(side),
        "warnings": draw(st.lists(_json_values(), max_size=2)),
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"gpu-slots-change-{change}",
            "namespace": "kube-system",
            "labels": {"gpu-slots.io/change-record": kind},
        },
        "data": {"record.json": draw(st.one_of(st.just(json.dumps(record)), _deep(change)))},
    }


COLLECTIONS = {
    "Pod": f"/api/v1/namespaces/{TENANT}/pods",
    "ResourceClaim": f"/apis/resource.k8s.io/v1/namespaces/{TENANT}/resourceclaims",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "ConfigMap": "/api/v1/namespaces/kube-system/configmaps",
}


def _create_and_check(stack: Stack, body: dict[str, Any]) -> None:
    """Create `body` as its writer would; the next snapshot is fresh and its pages answer."""
    at = datetime.now(UTC)
    url = stack.simulator.url + COLLECTIONS[body["kind"]]
    created = httpx.post(url, json=body, timeout=30)
    assert created.status_code < 500, created.text[:500]
    if created.status_code == 201:  # else the API server refused it: nothing reaches us
        shown_fresh(stack.client, after=at)


@pytest.mark.parametrize("kind", [pods, claims, slices, records], ids=lambda s: s.__name__)
def test_hostile_objects_leave_the_snapshot_fresh_and_the_pages_answering(
    stack: Stack, kind: Any
) -> None:
    @fuzz_settings(TENANT_EXAMPLES)
    @given(body=kind())
    def create(body: dict[str, Any]) -> None:
        _create_and_check(stack, body)

    create()


# Every page and API with all the hostile objects in: 2xx, or a 4xx the API documents.
PAGES = [
    "/",
    "/findings",
    "/usage",
    "/usage/history",
    "/fit",
    "/docs/findings",
    "/api/v1/summary",
    "/api/v1/nodes",
    "/api/v1/findings",
    "/api/v1/usage?by=owner",
    "/api/v1/usage?by=node",
    "/api/v1/showback",
    "/api/v1/plugin/rollout",
    "/metrics",
] + [p for node in NODES[:3] for p in (f"/nodes/{node}", f"/api/v1/nodes/{node}")]
ADMIN_PAGES = [
    "/admin/plugin",
    "/admin/changes",
    "/admin/plugin/rollout",
    "/api/v1/changes",
    "/api/v1/plugin/config",
] + [f"/admin/nodes/{node}/gpus" for node in NODES[:3]]


def test_every_page_answers_with_every_hostile_object_in(stack: Stack) -> None:
    """Runs after the generated objects above (one module, one stack, in file order)."""
    for path in PAGES:
        answer, took = timed(lambda p=path: stack.client.get(p))
        held_response(answer, took)
        assert answer.status_code < 400, (path, answer.text[:500])
    log_in(stack)
    for path in ADMIN_PAGES:
        answer, took = timed(lambda p=path: stack.client.get(p, headers=ADMIN))
        held_response(answer, took)
        assert answer.status_code < 400, (path, answer.text[:500])
    listed = stack.client.get("/api/v1/changes", headers=ADMIN).json()
    for change in [c["id"] for c in listed["changes"]][:5]:
        path = f"/api/v1/changes/{change}/rollback"
        answer, took = timed(
            lambda p=path: stack.client.post(p, params={"dryRun": "true"}, headers=ADMIN)
        )
        held_response(answer, took)
        assert answer.status_code in (200, 404, 409, 422), answer.text[:500]
    assert healthz_s(stack) < 1.0
