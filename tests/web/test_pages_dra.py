"""Pages: DRA GPUs drawn with their claims, "Dynamic Resource Allocation", both totals."""

from __future__ import annotations

from app.domain.snapshot import Snapshot
from tests.domain.dra_worlds import (
    claim,
    claim_pod,
    device_class,
    dra_readings,
    dra_world,
    gpu_device,
    mig_device,
    pod_proc,
    resource_slice,
)
from tests.domain.worlds import snap
from tests.web.page_snapshots import page_app
from tests.web.test_pages import get, parse

TS = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}


def _snapshot() -> Snapshot:
    devices = [gpu_device(i) for i in range(3)] + [mig_device(3, start=0), mig_device(3, start=4)]
    return snap(
        dra_world(
            classes=[device_class(), device_class("mig.nvidia.com", kind="mig")],
            slices=[resource_slice(devices=devices)],
            claims=[
                claim("solo", devices=["gpu-0"], reserved=["a"]),
                claim("<b>shared</b>", devices=["gpu-1"], reserved=["b", "c"], sharing=TS),
                claim(
                    "slice",
                    device_class_name="mig.nvidia.com",
                    devices=["gpu-3-mig-9-0-4"],
                    reserved=["d"],
                ),
            ],
            pods=[
                claim_pod(p, c)
                for p, c in (
                    ("a", "solo"),
                    ("b", "<b>shared</b>"),
                    ("c", "<b>shared</b>"),
                    ("d", "slice"),
                )
            ],
            readings=dra_readings(
                {
                    0: [pod_proc("a")],
                    1: [pod_proc("b", pid=2), pod_proc("c", pid=3)],
                    3: [pod_proc("d", pid=4)],
                },
                mig=[3],
            ),
        )
    )


def test_dra_node_card_says_dynamic_resource_allocation_and_draws_claims() -> None:
    app, _ = page_app(_snapshot())
    html = get(app, "/").text
    page = parse(html)
    assert page.text("allocation-dra-1") == "Dynamic Resource Allocation"
    assert page.by_testid("allocation-gpu-1") == []  # the plugin node shows its mode instead
    assert page.text("dra-gpus-dra-1").startswith("Handed out through DRA claims \u00d74")
    cells = [
        (c["data-device"], c["data-held"], c["class"]) for c in page.by_testid("dra-device-cell")
    ]
    assert cells == [
        ("gpu-0", "true", "slot dra held"),
        ("gpu-1", "true", "slot dra shared"),
        ("gpu-2", "false", "slot dra free"),
        ("gpu-3-mig-9-0-4", "true", "slot dra held"),
        ("gpu-3-mig-9-4-4", "false", "slot dra free"),
    ]
    claims = [(c["data-claim"], c["data-sharing"]) for c in page.by_testid("claim")]
    assert claims == [
        ("ml/solo", "Exclusive"),
        ("ml/<b>shared</b>", "TimeSlicing"),
        ("ml/slice", "Exclusive"),
    ]
    assert page.text("claims-GPU-dra-1-1") == "Claim ml/<b>shared</b> (time-slicing): ml/b, ml/c"
    assert "<b>shared</b>" not in html  # cluster data is escaped
    assert page.text("dra-total-devices") == "Devices 5"
    assert page.text("dra-total-allocated") == "Allocated 3"
    assert page.text("dra-total-shared") == "Shared 1"
    assert page.text("dra-total-free") == "Free 2"
    assert page.text("dra-total-pending_claims") == "Pending claims 0"
    # Plugin slots stay apart: DRA devices are not added in.
    assert page.text("total-allocatable").startswith("Allocatable slots 4 ")


def test_dra_parts_of_the_pages_in_korean() -> None:
    app, _ = page_app(_snapshot())
    page = parse(get(app, "/?lang=ko").text)
    assert page.text("allocation-dra-1") == "동적 리소스 할당(DRA)"
    assert page.text("claims-GPU-dra-1-1") == "클레임 ml/<b>shared</b> (시분할): ml/b, ml/c"
    assert page.text("dra-total-pending_claims") == "대기 중인 클레임 0"


def test_no_dra_totals_panel_without_dra_devices() -> None:
    app, _ = page_app(snap(dra_world(dra_node=False, slices=[], classes=[])))
    assert parse(get(app, "/").text).by_testid("dra-totals") == []


def test_dra_node_detail_lists_its_claims() -> None:
    app, _ = page_app(_snapshot())
    page = parse(get(app, "/nodes/dra-1").text)
    assert page.text("dra-claims") == (
        "DRA claims on this node GPUClaimSharingPods 0ml/soloexclusiveml/a "
        "1ml/<b>shared</b>time-slicingml/b, ml/c 3ml/sliceexclusiveml/d"
    )
    assert parse(get(app, "/nodes/gpu-1").text).by_testid("dra-claims") == []


def test_dra_node_figures_count_devices_not_slots() -> None:
    app, _ = page_app(_snapshot())
    page = parse(get(app, "/").text)
    assert page.text("node-dra-devices-dra-1") == "DRA devices 5"
    assert page.text("node-dra-claimed-dra-1") == "Claimed 3"
    assert page.text("node-dra-free-dra-1") == "Unclaimed 2"
    assert page.by_testid("node-allocatable-dra-1") == []
    assert page.text("node-allocatable-gpu-1") == "Allocatable 4"
    # A DRA GPU has no slot cells: its claims are devices, not over-capacity slots.
    assert [c for c in page.by_testid("slot-cell") if "over" in c.get("class", "")] == []
