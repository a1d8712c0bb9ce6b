"""Preview and rollout figures: slots per node, pods that no longer fit, what is stuck."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from app.domain.changes.models import PluginSettings
from app.domain.changes.preview import object_diff, rollout_status, slots_by_node
from app.domain.changes.rollout import RolloutStatus, RolloutTarget
from app.domain.cluster import AccountingOptions
from app.domain.engine.build import build_snapshot
from app.domain.snapshot import Mode, Snapshot
from app.i18n.translate import Translator
from tests import factories as f
from tests.domain.dra_worlds import dra_world
from tests.domain.worlds import snap

GPU = "nvidia.com/gpu"


def settings(mode: Mode = Mode.TIME_SLICING, replicas: int = 4, **flags: Any) -> PluginSettings:
    resource = f"{GPU}.shared" if flags.get("rename_by_default") else GPU
    return PluginSettings(
        mode,
        replicas,
        resource,
        bool(flags.get("rename_by_default")),
        bool(flags.get("fail_requests_greater_than_one")),
    )


def snapshot(*, allocatable: int = 2, pods: list[Any] | None = None) -> Snapshot:
    ds = f.plugin_daemonset()
    state = f.cluster(
        daemonset=ds,
        nodes=[f.node("gpu-1", allocatable=allocatable)],
        pods=[f.plugin_pod("gpu-1"), *(pods or [])],
        reports=[f.report("gpu-1", f.gpus(2, node_name="gpu-1"))],
    )
    return build_snapshot(state, options=AccountingOptions(), now=f.NOW)


def waiting_en(status: RolloutStatus) -> list[str]:
    """What the rollout waits for, worded as the English page and JSON word it."""
    t = Translator("en")
    return [t(f"rollout.{w.code}", **w.params) for w in status.stuck]


def test_slots_by_node_multiplies_visible_gpus_by_replicas() -> None:
    rows = slots_by_node(snapshot(), settings(replicas=4))
    assert [(r.node, r.visible_gpus, r.before, r.after) for r in rows] == [("gpu-1", 2, 2, 8)]
    assert rows[0].pods == ()


def test_slots_by_node_lists_pods_over_the_new_count() -> None:
    pods = [f.pod("a", node="gpu-1", gpus=2), f.pod("b", node="gpu-1", gpus=1)]
    now = snapshot(allocatable=8, pods=pods)
    rows = slots_by_node(now, settings(Mode.BASIC, 1))
    assert rows[0].after == 2 and rows[0].held == 3
    assert sorted(p.pod for p in rows[0].pods) == ["ml/a", "ml/b"]
    impact = rows[0].pods[0]
    assert (impact.reason, impact.held, impact.advertised) == ("over-advertised", 3, 2)


def test_slots_by_node_rename_leaves_old_resource_pods_without_slots() -> None:
    rows = slots_by_node(
        snapshot(pods=[f.pod("a", node="gpu-1")]), settings(rename_by_default=True)
    )
    assert [(p.pod, p.reason) for p in rows[0].pods] == [("ml/a", "resource-gone")]


def test_slots_by_node_flags_multi_slot_pods_under_fail_requests() -> None:
    now = snapshot(allocatable=8, pods=[f.pod("a", node="gpu-1", gpus=2)])
    rows = slots_by_node(now, settings(fail_requests_greater_than_one=True))
    assert [p.reason for p in rows[0].pods] == ["refused-above-one"]


def _ds(generation: int, observed: int, *, desired: int = 1) -> dict[str, Any]:
    ds = f.plugin_daemonset()
    ds["metadata"]["generation"] = generation
    ds["status"] = {"observedGeneration": observed, "desiredNumberScheduled": desired}
    return ds


def _plugin_pod(generation: int, *, ready: bool = True) -> dict[str, Any]:
    pod: dict[str, Any] = f.plugin_pod("gpu-1", ready=ready)
    pod["metadata"].setdefault("labels", {})["pod-template-generation"] = str(generation)
    return pod


def test_rollout_done_when_pods_updated_and_node_advertises() -> None:
    status = rollout_status(
        _ds(2, 2),
        [_plugin_pod(2)],
        snapshot(allocatable=8),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert status.stuck == ()
    assert status.done
    assert [(n.node, n.expected, n.advertised) for n in status.nodes] == [("gpu-1", 8, 8)]


def test_rollout_names_the_old_pod_and_the_unchanged_node() -> None:
    status = rollout_status(
        _ds(2, 2),
        [_plugin_pod(1)],
        snapshot(allocatable=2),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert not status.done
    text = " ".join(waiting_en(status))
    assert "still runs the old template" in text
    assert "Node gpu-1 advertises 2 nvidia.com/gpu, expected 8" in text


def test_rollout_names_a_pod_that_is_not_ready() -> None:
    status = rollout_status(
        _ds(2, 2),
        [_plugin_pod(2, ready=False)],
        snapshot(allocatable=8),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert any("is not ready" in item for item in waiting_en(status))


def test_rollout_waits_for_the_controller_to_observe() -> None:
    status = rollout_status(
        _ds(2, 1),
        [_plugin_pod(2)],
        snapshot(allocatable=8),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert any("has not seen generation 2" in item for item in waiting_en(status))


def test_rollout_without_generation_label_uses_start_time() -> None:
    pod = f.plugin_pod("gpu-1", started_at=f.NOW)
    before = f.NOW - timedelta(seconds=5)
    status = rollout_status(
        _ds(2, 2),
        [pod],
        snapshot(allocatable=8),
        RolloutTarget(expected=settings(), generation=2, since=before),
    )
    assert status.done


def test_object_diff_hides_server_fields_and_shows_changes() -> None:
    before = {"metadata": {"name": "x", "resourceVersion": "1"}, "data": {"a": "1"}}
    after = {"metadata": {"name": "x", "resourceVersion": "2"}, "data": {"a": "2"}}
    diff = object_diff(before, after, title="configmap/x")
    assert "-  a: '1'" in diff and "+  a: '2'" in diff
    assert "resourceVersion" not in diff
    assert object_diff(before, None, title="configmap/x").count("-") >= 3


def test_rollout_leaves_out_a_node_whose_gpus_a_dra_driver_hands_out() -> None:
    status = rollout_status(
        _ds(2, 2),
        [_plugin_pod(2)],
        snap(dra_world()),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert [(n.node, n.state) for n in status.nodes] == [("gpu-1", "waiting")]


def _pod_on(node: str, generation: int, *, ready: bool = True) -> dict[str, Any]:
    pod = _plugin_pod(generation, ready=ready)
    pod["metadata"]["name"] = f"plugin-{node}"
    pod["spec"]["nodeName"] = node
    return pod


def test_rollout_held_by_an_unready_new_pod_names_the_node_at_once() -> None:
    pods = [_pod_on("gpu-1", 1), _pod_on("gpu-2", 1), _pod_on("gpu-ws", 2, ready=False)]
    status = rollout_status(
        _ds(2, 2, desired=3),
        pods,
        snapshot(allocatable=2),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert status.blocked_by == ("gpu-ws",)
    first = waiting_en(status)[0]
    assert "maxUnavailable (1)" in first and "gpu-ws" in first


def test_rollout_is_not_held_while_the_budget_has_room() -> None:
    ds = _ds(2, 2, desired=3)
    ds["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
    pods = [_pod_on("gpu-1", 1), _pod_on("gpu-2", 1), _pod_on("gpu-ws", 2, ready=False)]
    status = rollout_status(
        ds, pods, snapshot(allocatable=2), RolloutTarget(expected=settings(), generation=2)
    )
    assert status.blocked_by == ()


def test_rollout_counts_pods_updated_when_the_controller_does() -> None:
    ds = _ds(2, 2)  # a new updateStrategy: generation 2, the pods keep generation 1
    ds["status"]["updatedNumberScheduled"] = 1
    status = rollout_status(
        ds,
        [_plugin_pod(1)],
        snapshot(allocatable=8),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert status.done


def _crashing_on(node: str, generation: int) -> dict[str, Any]:
    pod: dict[str, Any] = f.plugin_pod(node, ready=False, waiting_reason="CrashLoopBackOff")
    pod["metadata"]["name"] = f"plugin-{node}"
    pod["metadata"]["labels"]["pod-template-generation"] = str(generation)
    return pod


def _budget(ds: dict[str, Any], max_unavailable: int) -> dict[str, Any]:
    ds["spec"]["updateStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": max_unavailable},
    }
    return ds


def test_rollout_is_held_only_while_the_failing_pods_alone_spend_the_budget() -> None:
    """Issue 44: a crash-looping pod holds the rollout for good; a pod that is only starting
    spends the rest of a raised budget for a few seconds, which is progress, not a hold."""
    failing = _crashing_on("gpu-ws", 2)
    held = rollout_status(
        _budget(_ds(2, 2, desired=3), 1),
        [_pod_on("gpu-1", 1), _pod_on("gpu-2", 1), failing],
        snapshot(allocatable=2),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert held.held_by == ("gpu-ws",)
    passing = rollout_status(
        _budget(_ds(2, 2, desired=3), 2),
        [_pod_on("gpu-1", 1), _pod_on("gpu-2", 2, ready=False), failing],
        snapshot(allocatable=2),
        RolloutTarget(expected=settings(), generation=2),
    )
    assert passing.blocked_by == ("gpu-2", "gpu-ws")  # the budget is spent for now ...
    assert passing.held_by == ()  # ... but not held: gpu-2's pod is starting


def test_rollout_counts_pods_of_its_template_after_a_budget_raise() -> None:
    """Raising maxUnavailable mid-rollout moves the generation, not the pod template."""
    status = rollout_status(
        _ds(3, 3, desired=2),
        [_pod_on("gpu-1", 2), _pod_on("gpu-2", 3)],
        snapshot(allocatable=8),
        RolloutTarget(expected=settings(), generation=3, template_generation=2),
    )
    assert status.updated == 2
    assert status.progressed_at is not None
