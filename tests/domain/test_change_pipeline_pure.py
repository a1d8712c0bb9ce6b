"""Issue 28's pure parts: unbound pods named, preview rows of nodes a change cannot reach,
the rollout record, maxUnavailable raised and put back, refusals up front."""

from __future__ import annotations

from typing import Any

from app.domain.changes.models import PluginSettings, RefusalCode
from app.domain.changes.preview import rollout_status, slots_by_node
from app.domain.changes.rollout import RolloutTarget
from app.domain.changes.rollout_record import (
    RolloutRecord,
    passed_now,
    planned_rollout,
    restored_budget,
    rollout_record,
)
from app.domain.changes.split_scope import dra_held, split_refusal
from app.domain.cluster import AccountingOptions
from app.domain.engine.build import build_snapshot
from app.domain.snapshot import Mode, NodeConfig, Snapshot
from app.i18n.translate import Translator
from tests import factories as f

TS4 = PluginSettings(Mode.TIME_SLICING, 4, "nvidia.com/gpu", False, False)
TARGET = "kube-system/nvidia-device-plugin-daemonset"


def _snapshot() -> Snapshot:
    state = f.cluster(
        daemonset=f.plugin_daemonset(),
        nodes=[f.node("gpu-1", allocatable=2)],
        pods=[f.plugin_pod("gpu-1")],
        reports=[f.report("gpu-1", f.gpus(2, node_name="gpu-1"))],
    )
    return build_snapshot(state, options=AccountingOptions(), now=f.NOW)


def _pod(name: str, node: str | None, *, ready: bool, generation: int) -> dict[str, Any]:
    pod: dict[str, Any] = f.plugin_pod("gpu-1", ready=ready)
    pod["metadata"]["name"] = name
    pod["metadata"].setdefault("labels", {})["pod-template-generation"] = str(generation)
    if node is None:
        pod["spec"].pop("nodeName", None)
    else:
        pod["spec"]["nodeName"] = node
    return pod


def test_rollout_names_a_pod_not_yet_bound_never_a_question_mark() -> None:
    ds = f.plugin_daemonset()
    ds["metadata"]["generation"] = 2
    ds["status"] = {"observedGeneration": 2, "desiredNumberScheduled": 2}
    pods = [
        _pod("plugin-gpu-1", "gpu-1", ready=True, generation=1),
        _pod("plugin-new", None, ready=False, generation=2),
    ]
    status = rollout_status(ds, pods, _snapshot(), RolloutTarget(expected=TS4, generation=2))

    assert status.blocked_by == ("pod/plugin-new",)
    english = [Translator("en")(f"rollout.{w.code}", **w.params) for w in status.stuck]
    assert not any("?" in line for line in english)
    assert "the plugin pod on pod/plugin-new is not ready" in english[0]


def test_preview_keeps_the_figures_of_a_node_another_install_runs() -> None:
    snapshot = _snapshot()
    node = snapshot.nodes[0]
    other = node.model_copy(
        update={
            "config": NodeConfig(
                daemonset="nvidia-device-plugin/nvidia-device-plugin",
                managed_by="helm",
                source=None,
                configmap=None,
                key=None,
                label=None,
                mig_strategy=None,
            )
        }
    )
    ours, theirs = (
        slots_by_node(s, TS4, target=TARGET)[0]
        for s in (snapshot, snapshot.model_copy(update={"nodes": [other]}))
    )
    assert (ours.before, ours.after, ours.unchanged) == (2, 8, None)
    assert (theirs.before, theirs.after, theirs.unchanged) == (2, 2, "other-install")
    assert theirs.governed_by == "nvidia-device-plugin/nvidia-device-plugin"
    refused = split_refusal(other, target=TARGET)
    assert refused is not None and refused.code is RefusalCode.OTHER_INSTALL
    assert split_refusal(node, target=TARGET) is None
    dra = node.model_copy(update={"allocation": "dra"})
    assert (slots_by_node(snapshot.model_copy(update={"nodes": [dra]}), TS4)[0].unchanged) == "dra"
    refused_dra = split_refusal(dra, target=TARGET)
    assert refused_dra is not None and refused_dra.code is RefusalCode.DRA_NODE


def test_passing_failing_nodes_raises_the_budget_records_it_and_puts_it_back() -> None:
    ds = f.plugin_daemonset()
    record = RolloutRecord(change_id="c-1", since="2026-01-01T00:00:00Z", broken_before=("ws",))

    written, kept = planned_rollout(
        ds, record=record, failing=frozenset({"ws"}), pass_failing=True, budget_now=1
    )

    assert written["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 2
    assert rollout_record(written) == kept and kept.budget is not None
    assert (kept.budget.before, kept.budget.raised_to) == (None, 2)
    back = restored_budget(written, kept, at="2026-01-01T00:05:00Z")
    assert back is not None
    assert "maxUnavailable" not in back["spec"]["updateStrategy"]["rollingUpdate"]
    restored = rollout_record(back)
    assert restored is not None and restored.budget is not None
    assert restored.budget.restored_at == "2026-01-01T00:05:00Z"
    assert restored_budget(back, restored, at="later") is None  # already put back
    edited = {**written, "spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 5}}}}
    assert restored_budget(edited, kept, at="later") is None  # someone else's value stays

    plain, plain_record = planned_rollout(
        ds, record=record, failing=frozenset({"ws"}), pass_failing=False, budget_now=1
    )
    assert plain_record.budget is None
    assert plain.get("spec", {}).get("updateStrategy") == ds.get("spec", {}).get("updateStrategy")


def test_a_held_rollout_let_pass_later_keeps_its_template_generation_and_puts_back() -> None:
    """Issue 44: the rollout page's way forward raises the budget on the held DaemonSet."""
    ds = f.plugin_daemonset()
    ds["metadata"]["generation"] = 4
    record = RolloutRecord(change_id="c-1", since="2026-01-01T00:00:00Z", broken_before=("ws",))

    written, kept = passed_now(ds, record, 1, budget_now=1)

    assert written["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 2
    assert rollout_record(written) == kept and kept.template_generation == 4
    assert kept.budget is not None and (kept.budget.before, kept.budget.raised_to) == (None, 2)
    back = restored_budget(written, kept, at="2026-01-01T00:05:00Z")
    assert back is not None
    assert "maxUnavailable" not in back["spec"]["updateStrategy"]["rollingUpdate"]


def test_a_gpu_held_by_a_dra_claim_is_never_given_to_the_plugin() -> None:
    node = _snapshot().nodes[0]
    held = node.gpus[0].model_copy(update={"role": "dra"})
    both = node.model_copy(update={"allocation": "both", "gpus": [held, *node.gpus[1:]]})

    refused = dra_held(both, [held.uuid, node.gpus[1].uuid])

    assert refused is not None and refused.code is RefusalCode.DRA_HELD_GPU
    assert refused.details == (held.uuid,)
    assert dra_held(both, [node.gpus[1].uuid]) is None
