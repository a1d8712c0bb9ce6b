"""A sample of the fuzz tier's hostile tenant objects on the real control plane (issue 48).

The same generated pods and DRA claims as tests/fuzz/test_tenant_objects.py, created in
kube-apiserver v1.35.4 (its own validation refuses what it refuses; what it stores reaches
the installed dashboard through its watch): after each one a snapshot built after it is
served, fresh, the pages it shows on answer 200 within a second, and /healthz too.
REAL_SAMPLE_EXAMPLES of each kind (tests/fuzz/watch.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from hypothesis import given

from tests.fuzz.test_tenant_objects import TENANT, claims, pods
from tests.fuzz.watch import REAL_SAMPLE_EXAMPLES, fuzz_settings, shown_fresh
from tests.live import wait_for
from tests.real.conftest import RealWorld

COLLECTIONS = {
    "Pod": f"/api/v1/namespaces/{TENANT}/pods",
    "ResourceClaim": f"/apis/resource.k8s.io/v1/namespaces/{TENANT}/resourceclaims",
}


@pytest.fixture(scope="module")
def tenant(world: RealWorld) -> Iterator[httpx.Client]:
    """The API server as a tenant's kubectl reaches it (the plane's admin identity)."""
    with world.plane.http() as api:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TENANT}}
        api.post("/api/v1/namespaces", json=namespace).raise_for_status()
        try:
            yield api
        finally:
            api.delete(f"/api/v1/namespaces/{TENANT}")
            wait_for(
                lambda: api.get(f"/api/v1/namespaces/{TENANT}").status_code == 404,
                timeout_s=120,
                interval_s=0.5,
                what="the fuzz namespace gone before the next real-tier test",
            )


@pytest.mark.parametrize("kind", [pods, claims], ids=lambda s: s.__name__)
def test_a_sample_of_hostile_objects_on_the_real_api_server(
    world: RealWorld, tenant: httpx.Client, kind: Any
) -> None:
    stored: list[str] = []
    with httpx.Client(base_url=world.dashboard.url, timeout=30) as dashboard:

        @fuzz_settings(REAL_SAMPLE_EXAMPLES)
        @given(body=kind())
        def create(body: dict[str, Any]) -> None:
            if body["kind"] == "Pod":  # pending for good: never on the nodes the tier shares
                body["spec"].pop("nodeName", None)
                body["spec"]["nodeSelector"] = {"gpu-slots.io/fuzz": "nowhere"}
            at = datetime.now(UTC)
            created = tenant.post(COLLECTIONS[body["kind"]], json=body)
            assert created.status_code < 500, created.text[:500]
            if created.status_code == 201:
                stored.append(body["metadata"]["name"])
                shown_fresh(dashboard, after=at)

        create()
    assert stored  # the sample reached the dashboard, not only the API server's validation
