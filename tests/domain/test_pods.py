"""Slots per pod, counted like the scheduler counts them."""

from __future__ import annotations

import pytest

from app.domain.accounting.pods import holds_resources, pod_env_visible_devices, pod_slots
from app.domain.quantity import QuantityError
from tests import factories as f
from tests.upstream import refused_saying

G = "nvidia.com/gpu"


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "slots"),
    [
        ([f.container(gpus=1)], [], None, 1),
        ([f.container(gpus=1, limits_only=False)], [], None, 1),
        ([f.container("a", gpus=1), f.container("b", gpus=2)], [], None, 3),
        ([f.container(gpus=1)], [f.container("init", gpus=3)], None, 3),
        ([f.container(gpus=2)], [f.container("init", gpus=1)], None, 2),
        ([f.container(gpus=1)], [f.container("i1", gpus=2), f.container("i2", gpus=1)], None, 2),
        ([f.container(gpus=1)], [f.container("side", gpus=1, restart_policy="Always")], None, 2),
        (
            [f.container(gpus=1)],
            [f.container("side", gpus=1, restart_policy="Always"), f.container("i", gpus=2)],
            None,
            3,
        ),
        ([f.container(gpus=1)], [], {G: "1"}, 2),
        ([f.container()], [], None, 0),
    ],
    ids=[
        "one",
        "request",
        "two-containers",
        "init-bigger",
        "app-bigger",
        "init-max",
        "sidecar-adds",
        "init-after-sidecar",
        "overhead",
        "none",
    ],
)
def test_pod_slots_scheduler_counting(
    containers: list[f.Manifest],
    init: list[f.Manifest],
    overhead: dict[str, str] | None,
    slots: int,
) -> None:
    manifest = f.pod("p", containers=containers, init_containers=init, overhead=overhead)
    assert pod_slots(manifest).get(G, 0) == slots


def test_pod_slots_request_wins_over_limit() -> None:
    spec = {"name": "c", "resources": {"limits": {G: "2"}, "requests": {G: "1"}}}
    assert pod_slots(f.pod("p", containers=[spec])) == {G: 1}


def test_pod_slots_ignores_non_nvidia_resources() -> None:
    spec = {"name": "c", "resources": {"limits": {"cpu": "x", "nvidia.com/mig-1g.10gb": 2}}}
    assert pod_slots(f.pod("p", containers=[spec])) == {"nvidia.com/mig-1g.10gb": 2}


def test_pod_slots_garbage_quantity_raises_naming_the_field() -> None:
    spec = {"name": "c", "resources": {"limits": {G: "x"}}}
    with refused_saying(QuantityError, r"resources.limits.nvidia.com/gpu: 'x'"):
        pod_slots(f.pod("p", containers=[spec]))


@pytest.mark.parametrize(
    ("requests", "limits", "expected"),
    [
        ({G: "2k"}, {G: "2k"}, 2000),
        ({G: "1e0"}, {}, 1),
        ({}, {G: "1000m"}, 1),
        ({G: "1Ki"}, {G: "1Ki"}, 1024),
        ({G: 3}, {G: "3"}, 3),
    ],
)
def test_pod_slots_reads_every_quantity_form(
    requests: dict[str, object], limits: dict[str, object], expected: int
) -> None:
    spec = {"name": "c", "resources": {"requests": requests, "limits": limits}}
    assert pod_slots(f.pod("p", containers=[spec])) == {G: expected}


def test_pod_slots_sums_exact_amounts_before_rounding_up() -> None:
    half = {"name": "c", "resources": {"limits": {G: "500m"}}}
    assert pod_slots(f.pod("p", containers=[half, dict(half, name="d")])) == {G: 1}


@pytest.mark.parametrize(
    ("phase", "node", "holds"),
    [
        ("Running", "n", True),
        ("Pending", "n", True),
        ("Succeeded", "n", False),
        ("Failed", "n", False),
        ("Pending", None, False),
    ],
)
def test_holds_resources_by_phase_and_binding(phase: str, node: str | None, holds: bool) -> None:
    assert holds_resources(f.pod("p", phase=phase, node=node)) is holds


def test_pod_env_visible_devices_found_in_any_container() -> None:
    manifest = f.pod(
        "p", containers=[f.container(), f.container("b", env={"NVIDIA_VISIBLE_DEVICES": "all"})]
    )
    assert pod_env_visible_devices(manifest) == "all"
    assert pod_env_visible_devices(f.pod("q")) is None
