"""The fit check as a pure function of the snapshot: literal verdicts, reasons and GPUs."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.fit.check import FitAnswer, Wishes, fit_answer
from app.domain.fit.manifest import FitInputError, parse_text, read_ask
from app.domain.fit.placement import CandidateMemo
from app.domain.snapshot import Snapshot
from tests import factories as f
from tests.domain.worlds import snap, ts_world, world


def _pod(gpus: int = 1, *, resource: str = "nvidia.com/gpu", **spec: Any) -> dict[str, Any]:
    manifest = f.pod("ask", node=None, gpus=gpus, resource=resource)
    manifest["spec"].update(spec)
    return manifest


def _answer(snapshot: Snapshot, manifest: dict[str, Any], **wishes: Any) -> FitAnswer:
    return fit_answer(snapshot, read_ask(manifest), wishes=Wishes(**wishes))


def _reasons(answer: FitAnswer) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    return {n.node: [(r.code, r.params) for r in n.reasons] for n in answer.nodes}


def _two_nodes(second: f.Manifest, *, pods: tuple[f.Manifest, ...] = ()) -> Snapshot:
    return snap(
        world(
            nodes=[f.node("gpu-1", allocatable=4), second],
            pods=pods,
            reports=[f.report("gpu-1"), f.report("gpu-2")],
        )
    )


def test_fit_basic_free_slots_fit_with_first_free_gpus() -> None:
    snapshot = snap(world(pods=[f.pod("held", node="gpu-1", gpus=1)]))
    answer = _answer(snapshot, _pod(2))
    assert answer.fits is True
    only = answer.nodes[0]
    assert (only.node, only.fits, only.reasons) == ("gpu-1", True, [])
    # without kubelet assignments the held slot is inferred on no GPU in particular: the
    # first free GPUs by index are the likely ones
    assert len(only.gpus) == 2 and all(g.startswith("GPU-gpu-1-") for g in only.gpus)


def test_fit_more_than_free_is_insufficient_with_the_numbers() -> None:
    snapshot = snap(world(pods=[f.pod("held", node="gpu-1", gpus=3)]))
    answer = _answer(snapshot, _pod(2))
    assert answer.fits is False
    assert _reasons(answer) == {
        "gpu-1": [
            (
                "insufficient",
                {"resource": "nvidia.com/gpu", "requested": 2, "free": 1, "allocatable": 4},
            )
        ]
    }
    assert answer.nodes[0].gpus == []


def test_fit_cordoned_and_not_ready_nodes_say_so() -> None:
    cordoned = f.node("gpu-2", allocatable=4)
    cordoned["spec"] = {"unschedulable": True}
    assert _reasons(_answer(_two_nodes(cordoned), _pod(1)))["gpu-2"] == [("cordoned", {})]
    down = f.node("gpu-2", allocatable=4, ready=False)
    assert _reasons(_answer(_two_nodes(down), _pod(1)))["gpu-2"] == [("not-ready", {})]
    tolerating = _pod(
        1,
        tolerations=[
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ],
    )
    assert _reasons(_answer(_two_nodes(cordoned), tolerating))["gpu-2"] == []


def test_fit_taint_needs_a_toleration() -> None:
    tainted = f.node("gpu-2", allocatable=4)
    tainted["spec"] = {"taints": [{"key": "team", "value": "vision", "effect": "NoSchedule"}]}
    snapshot = _two_nodes(tainted)
    assert _reasons(_answer(snapshot, _pod(1)))["gpu-2"] == [
        ("taint", {"key": "team", "value": "vision", "effect": "NoSchedule"})
    ]
    equal = _pod(1, tolerations=[{"key": "team", "value": "vision", "effect": "NoSchedule"}])
    wrong = _pod(1, tolerations=[{"key": "team", "value": "nlp", "effect": "NoSchedule"}])
    exists = _pod(1, tolerations=[{"operator": "Exists"}])
    assert _reasons(_answer(snapshot, equal))["gpu-2"] == []
    assert _reasons(_answer(snapshot, wrong))["gpu-2"][0][0] == "taint"
    assert _reasons(_answer(snapshot, exists))["gpu-2"] == []


def test_fit_taint_on_the_requested_resource_is_tolerated_by_admission() -> None:
    tainted = f.node("gpu-2", allocatable=4)
    tainted["spec"] = {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}
    assert _reasons(_answer(_two_nodes(tainted), _pod(1)))["gpu-2"] == []


def test_fit_node_selector_and_affinity_on_model_labels() -> None:
    labelled = f.node("gpu-2", allocatable=4, labels={"nvidia.com/gpu.product": "NVIDIA-H100"})
    snapshot = _two_nodes(labelled)
    selector = _pod(1, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-H100"})
    assert _reasons(_answer(snapshot, selector)) == {
        "gpu-1": [
            (
                "node-selector",
                {"key": "nvidia.com/gpu.product", "wanted": "NVIDIA-H100", "found": None},
            )
        ],
        "gpu-2": [],
    }
    term = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100"]}
    affinity = _pod(
        1,
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [term]}]
                }
            }
        },
    )
    assert _reasons(_answer(snapshot, affinity)) == {"gpu-1": [("node-affinity", {})], "gpu-2": []}


def test_fit_time_slicing_refuses_above_one_only_with_the_flag() -> None:
    refusing = snap(ts_world(4, fail_gt_one=True))
    assert _reasons(_answer(refusing, _pod(2))) == {
        "gpu-1": [
            (
                "refused-above-one",
                {"resource": "nvidia.com/gpu", "requested": 2, "mode": "time-slicing"},
            )
        ]
    }
    assert _answer(refusing, _pod(1)).fits is True
    assert _answer(snap(ts_world(4)), _pod(2)).fits is True


def test_fit_time_slicing_distributed_spreads_packed_fills() -> None:
    held = [f.pod("held", node="gpu-1", gpus=1)]
    assignments = [f.assignment("held", ["GPU-gpu-1-0::0"])]
    distributed = snap(ts_world(4, pods=held, report_kwargs={"assignments": assignments}))
    assert _answer(distributed, _pod(3)).nodes[0].gpus == [
        "GPU-gpu-1-1",
        "GPU-gpu-1-2",
        "GPU-gpu-1-3",
    ]
    packed_yaml = (
        f.time_slicing_yaml(4) + "flags:\n  plugin:\n    sharedDevicesAllocationPolicy: packed\n"
    )
    packed = snap(
        ts_world(
            4,
            pods=held,
            report_kwargs={"assignments": assignments},
            configmaps=[f.configmap({"config.yaml": packed_yaml})],
            ds_kwargs={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"},
        )
    )
    assert packed.nodes[0].config is not None
    assert packed.nodes[0].config.allocation_policy == "packed"
    assert _answer(packed, _pod(3)).nodes[0].gpus == ["GPU-gpu-1-0"]


def test_fit_mig_profile_absent_or_all_held() -> None:
    snapshot = snap(world(allocatable=2, resource="nvidia.com/mig-1g.10gb"))
    absent = _answer(snapshot, _pod(1, resource="nvidia.com/mig-3g.40gb"))
    assert _reasons(absent) == {
        "gpu-1": [("mig-profile-absent", {"resource": "nvidia.com/mig-3g.40gb"})]
    }
    held = _answer(snapshot, _pod(3, resource="nvidia.com/mig-1g.10gb"))
    assert _reasons(held)["gpu-1"][0] == (
        "mig-profile-held",
        {"resource": "nvidia.com/mig-1g.10gb", "requested": 3, "free": 2, "allocatable": 2},
    )


def test_fit_wishes_narrow_the_gpus_by_model_and_free_memory() -> None:
    readings = [
        f.gpu(0, memory_used_mib=80000),
        f.gpu(1, memory_used_mib=1000),
        f.gpu(2, memory_used_mib=0),
        f.gpu(3, memory_used_mib=0),
    ]
    snapshot = snap(world(readings=readings))
    roomy = _answer(snapshot, _pod(1), gpu_model="a100", min_free_memory_mib=40000)
    assert roomy.nodes[0].gpus == ["GPU-gpu-1-1"]
    assert _reasons(_answer(snapshot, _pod(1), gpu_model="H100"))["gpu-1"] == [
        ("gpu-model", {"model": "H100", "found": "NVIDIA A100-SXM4-80GB"})
    ]
    assert _reasons(_answer(snapshot, _pod(4), min_free_memory_mib=2000))["gpu-1"] == [
        ("gpu-memory", {"wanted_mib": 2000, "best_mib": 81920})
    ]


def test_fit_reads_a_workload_template_and_yaml() -> None:
    text = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: research}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: main
              image: cuda
              resources: {limits: {nvidia.com/gpu: "2"}}
"""
    ask = read_ask(parse_text(text))
    assert (ask.kind, ask.namespace, dict(ask.slots)) == (
        "CronJob",
        "research",
        {"nvidia.com/gpu": 2},
    )


def _limit(value: str) -> str:
    resources = "{limits: {nvidia.com/gpu: " + value + "}}"
    return "kind: Pod\nspec: {containers: [{name: a, resources: " + resources + "}]}"


@pytest.mark.parametrize(
    ("text", "code", "params"),
    [
        ("[1, 2", "fit.input.syntax", None),
        ("kind: Pod\n---\nkind: Pod\n", "fit.input.several-documents", {"count": 2}),
        ("- a\n- b\n", "fit.input.not-a-mapping", {"field": "(document)"}),
        ("kind: Service\n", "fit.input.kind", {"kind": "Service"}),
        (
            "kind: Pod\nspec: {containers: []}\n",
            "fit.input.no-containers",
            {"field": "spec.containers"},
        ),
        (
            _limit("-1"),
            "fit.input.negative",
            {"field": "spec.containers[0].resources.limits.nvidia.com/gpu", "value": "-1"},
        ),
        (
            _limit("1.5"),
            "fit.input.not-whole",
            {"field": "spec.containers[0].resources.limits.nvidia.com/gpu", "value": "1.5"},
        ),
        (
            _limit("x"),
            "fit.input.quantity",
            {"field": "spec.containers[0].resources.limits.nvidia.com/gpu", "value": "x"},
        ),
        ("a: &a [*a]\n", "fit.input.too-deep", {"limit": 64}),
        (
            "kind: Pod\nspec: {resourceClaims: [{name: gpu}], containers: [{name: a}]}",
            "fit.input.dra-claims",
            {"field": "spec.resourceClaims"},
        ),
        ("x: " + "[" * 200 + "]" * 200, "fit.input.too-deep", {"limit": 64}),
    ],
)
def test_fit_bad_manifests_are_refused_naming_the_field(
    text: str, code: str, params: dict[str, Any] | None
) -> None:
    with pytest.raises(FitInputError) as caught:
        read_ask(parse_text(text))
    assert caught.value.code == code
    if params is not None:
        assert caught.value.params == params


def test_fit_alias_bomb_is_refused_before_it_expands() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(FitInputError) as caught:
        parse_text("\n".join(lines))
    assert caught.value.code == "fit.input.too-large"


def test_fit_unknown_resource_and_no_gpu_are_refused() -> None:
    snapshot = snap(world())
    with pytest.raises(FitInputError) as caught:
        _answer(snapshot, _pod(1, resource="nvidia.com/gpus"))
    assert (caught.value.code, caught.value.params) == (
        "fit.input.unknown-resource",
        {"resource": "nvidia.com/gpus"},
    )
    cpu_only = f.pod("ask", node=None, containers=[{"name": "a", "image": "x"}])
    with pytest.raises(FitInputError) as caught:
        _answer(snapshot, cpu_only)
    assert caught.value.code == "fit.input.no-gpu"


def test_fit_memo_never_changes_the_answer() -> None:
    memo = CandidateMemo()
    held = [f.pod("held", node="gpu-1", gpus=1)]
    assignments = [f.assignment("held", ["GPU-gpu-1-0::0"])]
    before = snap(ts_world(4, pods=held, report_kwargs={"assignments": assignments}))
    after = snap(ts_world(4))  # the holder gone: a new node state, its GPUs free again
    for snapshot in (before, after, before):
        for count in (1, 3, 6):
            ask = read_ask(_pod(count))
            assert fit_answer(snapshot, ask, memo=memo) == fit_answer(snapshot, ask)
    assert fit_answer(before, read_ask(_pod(1)), memo=memo).nodes[0].gpus == ["GPU-gpu-1-1"]
    assert fit_answer(after, read_ask(_pod(1)), memo=memo).nodes[0].gpus == ["GPU-gpu-1-0"]


def _quota(namespace: str, *, hard: str, used: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "gpus", "namespace": namespace},
        "spec": {"hard": {"requests.nvidia.com/gpu": hard}, **spec},
        "status": {
            "hard": {"requests.nvidia.com/gpu": hard},
            "used": {"requests.nvidia.com/gpu": used},
        },
    }


def test_fit_quota_used_up_refuses_on_every_node() -> None:
    snapshot = _two_nodes(f.node("gpu-2", allocatable=4))
    quotas = [_quota("ml", hard="4", used="3")]
    answer = fit_answer(snapshot, read_ask(_pod(2)), quotas=quotas)
    params = {"quota": "gpus", "resource": "nvidia.com/gpu", "requested": 2, "used": 3, "hard": 4}
    assert answer.fits is False
    assert _reasons(answer) == {
        "gpu-1": [("quota-exhausted", params)],
        "gpu-2": [("quota-exhausted", params)],
    }
    assert fit_answer(snapshot, read_ask(_pod(1)), quotas=quotas).fits is True
    elsewhere = [_quota("research", hard="4", used="4")]
    assert fit_answer(snapshot, read_ask(_pod(2)), quotas=elsewhere).fits is True
    scoped = [_quota("ml", hard="0", used="0", scopes=["BestEffort"])]
    assert fit_answer(snapshot, read_ask(_pod(2)), quotas=scoped).fits is True
