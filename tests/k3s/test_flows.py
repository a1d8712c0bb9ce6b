"""The seeds' flows on k3s, driven through the dashboard's pages in headless Chromium.

Each figure a page shows is compared with `kubectl describe node` (allocatable, allocated)
and with the processes the mock NVML serves. The node starts with the seed's DaemonSet
seeing all four GPUs (no NVIDIA_VISIBLE_DEVICES): 4 slots.

- a (seed 000): the split form keeps GPUs 2 and 3 for the host: the plugin advertises 2,
  the host's processes on GPUs 2 and 3 show as host with no finding; undo gives back 4.
- b (seed 004): basic -> time-slicing x8 with failRequestsGreaterThanOne (4 -> 32, the
  preview's figure), a replicas-only change 8 -> 4 restarts the plugin's pod (16), back to
  basic (4).
- c (what seed 000 warns against): a pod that sets NVIDIA_VISIBLE_DEVICES itself and runs
  on a GPU it holds no slot of is flagged, in both languages.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.k3s.pages import (
    describe_node,
    mock_processes,
    node_page,
    numbers,
    set_processes,
    signed_in,
)
from tests.node.world import (
    CONFIGMAP,
    NODE,
    PLUGIN_DS,
    PLUGIN_NS,
    NodeWorld,
    gpu_pod,
    machine_file,
    seed_objects,
    wait_until,
)

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

EDITOR = f"/admin/nodes/{NODE}/gpus"
GPUS = [g["uuid"] for g in machine_file("host-split", NODE)["gpus"]]
ROLLOUT_MS = 180_000


def _whole_node_daemonset() -> dict[str, Any]:
    """The seed's basic DaemonSet without NVIDIA_VISIBLE_DEVICES: all four GPUs."""
    daemonset = copy.deepcopy(
        next(o for o in seed_objects("host-split") if o["kind"] == "DaemonSet")
    )
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != "NVIDIA_VISIBLE_DEVICES"]
    return daemonset


@pytest.fixture
def four_slots(clean_node: NodeWorld) -> Iterator[NodeWorld]:
    world = clean_node
    namespace = next(o for o in seed_objects("host-split") if o["kind"] == "Namespace")
    world.apply([namespace, _whole_node_daemonset()])
    wait_until(
        lambda: (
            world.allocatable() == "4"
            and world.plugin_rolled()
            and world.node_view().get("expected_slots") == 4
        ),
        what="the plugin serving all 4 GPUs on k3s, the dashboard expecting 4",
    )
    yield world
    set_processes(world, {})


def _host_processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started = [subprocess.Popen(["sleep", "900"]) for _ in range(2)]
    try:
        yield started
    finally:
        for process in started:
            process.kill()
            process.wait(timeout=30)


host_processes = pytest.fixture(_host_processes)


def _one_plugin_ready(world: NodeWorld) -> bool:
    """One plugin pod serves the node (the shared DaemonSet's, or the split's own), Ready."""
    pods = [
        p
        for p in world.pods(PLUGIN_NS)
        if p["metadata"]["name"].startswith(PLUGIN_DS)
        and not p["metadata"].get("deletionTimestamp")
    ]
    conditions = [c for p in pods for c in (p.get("status") or {}).get("conditions") or []]
    return len(pods) == 1 and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions
    )


def _settled(world: NodeWorld, slots: int) -> bool:
    return (
        describe_node(world)["allocatable"] == slots
        and _one_plugin_ready(world)
        and world.node_view().get("allocatable") == slots
    )


def test_4a_host_reservation_through_the_split_form(
    four_slots: NodeWorld, host_processes: list[subprocess.Popen[bytes]]
) -> None:
    world = four_slots
    on_2, on_3 = (p.pid for p in host_processes)
    set_processes(world, {2: [on_2], 3: [on_3]})
    with signed_in(world, "ko", EDITOR) as tab:
        for index in (0, 1):
            tab.get_by_test_id(f"gpu-{index}-kubernetes").check()
        for index in (2, 3):
            tab.get_by_test_id(f"gpu-{index}-host").check()
        tab.get_by_test_id("preview-button").first.click()
        expect(tab.get_by_test_id("dry-run-ok")).to_be_visible()
        assert numbers(tab.get_by_test_id("slots-change").inner_text()) == [4, 2]
        tab.get_by_test_id("apply-button").click()
        expect(tab.get_by_test_id("applied")).to_be_visible()

        wait_until(lambda: _settled(world, 2), what="k3s's kubelet advertising the split's 2")
        assert describe_node(world) == {"allocatable": 2, "allocated": 0}
        for lang in ("ko", "en"):
            page = wait_until(
                lambda lang=lang: (
                    (p := node_page(tab, world, lang))["owners"].keys() == {on_2, on_3} and p
                ),
                what=f"the node page ({lang}) with the host's two processes",
                timeout_s=60,
            )
            assert (page["physical"], page["visible"], page["host"]) == (4, 2, 2), page
            assert (page["allocatable"], page["requested"]) == (2, 0), page
            assert page["owners"] == {on_2: "host", on_3: "host"}
            assert page["findings"] == [], page  # the difference explained, not flagged
        assert mock_processes(world) == {0: [], 1: [], 2: [on_2], 3: [on_3]}
        advertised = sorted(
            g["uuid"] for g in world.node_view()["gpus"] if g["role"] == "advertised"
        )
        assert advertised == sorted(GPUS[:2])

        tab.goto(f"{world.dashboard.url}{EDITOR}?lang=ko")
        tab.get_by_test_id("return-button").click()
        expect(tab.get_by_test_id("dry-run-ok")).to_be_visible()
        assert numbers(tab.get_by_test_id("slots-change").inner_text()) == [2, 4]
        # GPUs 2 and 3 go back to Kubernetes with the host's processes on them: confirmed.
        warning = tab.get_by_test_id("host-processes").inner_text()
        assert str(on_2) in warning and str(on_3) in warning, warning
        tab.get_by_test_id("apply-confirm").check()
        tab.get_by_test_id("apply-button").click()
        expect(tab.get_by_test_id("applied")).to_be_visible()
    wait_until(lambda: _settled(world, 4), what="the undo's 4 slots on k3s", timeout_s=180)
    assert describe_node(world) == {"allocatable": 4, "allocated": 0}


def _plugin_pod_uid(world: NodeWorld) -> str:
    pods = [
        p
        for p in world.pods(PLUGIN_NS)
        if p["metadata"]["name"].startswith(PLUGIN_DS)
        and not p["metadata"].get("deletionTimestamp")
    ]
    return str(pods[0]["metadata"]["uid"]) if len(pods) == 1 else ""


def _plugin_objects(world: NodeWorld) -> tuple[dict[str, Any], dict[str, Any]]:
    with world.plane.http() as http:
        ds = http.get(f"/apis/apps/v1/namespaces/{PLUGIN_NS}/daemonsets/{PLUGIN_DS}").json()
        cm = http.get(f"/api/v1/namespaces/{PLUGIN_NS}/configmaps/{CONFIGMAP}").json()
    return ds, cm


def _switch(tab: Any, world: NodeWorld, *, before: int, after: int) -> None:
    """Preview (its figures checked), apply, follow the rollout page to done."""
    tab.get_by_test_id("preview-button").click()
    expect(tab.get_by_test_id("dry-run-ok")).to_be_visible()
    row = tab.get_by_test_id(f"slots-{NODE}")
    assert numbers(row.get_by_test_id("slots-before").inner_text())[:1] == [before]
    assert numbers(row.get_by_test_id("slots-after").inner_text())[:1] == [after]
    expect(tab.get_by_test_id("totals-before-after")).to_have_attribute("data-after", str(after))
    tab.get_by_test_id("apply-button").click()
    expect(tab.get_by_test_id("rollout-done")).to_be_visible(timeout=ROLLOUT_MS)
    advertised = tab.get_by_test_id(f"rollout-{NODE}").get_by_test_id("advertised")
    assert numbers(advertised.inner_text())[:1] == [after]
    assert describe_node(world) == {"allocatable": after, "allocated": 0}


def test_4b_time_slicing_switch_through_the_mode_form(four_slots: NodeWorld) -> None:
    world = four_slots
    with signed_in(world, "en", "/admin/plugin") as tab:
        expect(tab.get_by_test_id("current-mode")).to_have_attribute("data-mode", "basic")
        tab.get_by_test_id("mode-time-slicing").check()
        tab.get_by_test_id("replicas").fill("8")
        tab.get_by_test_id("fail-requests-greater-than-one").check()
        _switch(tab, world, before=4, after=32)
        ds, cm = _plugin_objects(world)
        config = yaml.safe_load(cm["data"]["config.yaml"])
        assert config["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 8
        assert config["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True
        assert config["sharing"]["timeSlicing"].get("renameByDefault", False) is False
        env = {
            e["name"]: e.get("value")
            for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        assert env["CONFIG_FILE"].endswith("config.yaml")
        pod_before = _plugin_pod_uid(world)

        tab.get_by_test_id("back-to-form").click()
        current = tab.get_by_test_id("current-mode")
        expect(current).to_have_attribute("data-replicas", "8")
        tab.get_by_test_id("replicas").fill("4")
        _switch(tab, world, before=32, after=16)
        pod_after = _plugin_pod_uid(world)
        assert pod_after and pod_after != pod_before  # the rollout restart, as the manual says

        tab.get_by_test_id("back-to-form").click()
        tab.get_by_test_id("mode-basic").check()
        _switch(tab, world, before=16, after=4)
    view = wait_until(
        lambda: (v := world.node_view()).get("allocatable") == 4 and v,
        what="the dashboard showing basic's 4 again",
    )
    assert (view["mode"], view["expected_slots"]) == ("basic", 4)


def test_4c_a_pod_setting_visible_devices_itself_is_flagged(four_slots: NodeWorld) -> None:
    world = four_slots
    pod = gpu_pod("bypass", slots=0)
    spec = pod["spec"]
    spec["containers"][0]["resources"] = {}
    spec["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": GPUS[0]}]
    spec["runtimeClassName"] = "nvidia"
    world.apply([pod])
    world.wait_running("ml", "bypass")
    pid = world.container_pid("ml", "bypass")
    set_processes(world, {0: [pid]})
    codes = {"pod-sets-visible-devices", "pod-process-without-slot"}
    wait_until(
        lambda: codes <= {f["code"] for f in world.findings() if f.get("pod") == "ml/bypass"},
        what="the dashboard's findings for ml/bypass",
        timeout_s=60,
    )
    assert describe_node(world) == {"allocatable": 4, "allocated": 0}  # it holds no slot
    assert mock_processes(world)[0] == [pid]  # yet runs on GPU 0
    for lang in ("ko", "en"):
        with signed_in(world, lang, "/findings") as tab:
            for code in sorted(codes):
                found = tab.get_by_test_id(f"finding-{code}")
                expect(found.first).to_be_visible()
                own_link = found.first.get_by_test_id("finding-pod-link").first
                expect(own_link).to_contain_text("bypass")
            # One story: the process without a slot is folded under its cause, the variable.
            root = tab.get_by_test_id("finding-pod-sets-visible-devices").first
            expect(root.get_by_test_id("finding-pod-process-without-slot")).to_have_count(1)
            page = node_page(tab, world, lang)
            assert page["owners"] == {pid: "pod"}, page
            assert (page["allocatable"], page["requested"]) == (4, 0), page
            assert {f"finding-{c}" for c in codes} <= set(page["findings"]), page
    world.delete_pods("ml")
