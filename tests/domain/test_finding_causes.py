"""One finding per root cause: consequences name their root, roots list their consequences."""

from __future__ import annotations

from app.domain.findings.catalogue import CATALOGUE, finding
from app.domain.findings.causes import CAUSES, link_causes
from app.domain.snapshot import Finding
from tests import factories as f
from tests.domain.worlds import snap, world

SPLIT = f.host_split_uuids()


def _on(code: str, node: str = "gpu-1", *, pod: str | None = None) -> Finding:
    return finding(code, evidence={"x": 1}, remedy="kubectl get nodes", node=node, pod=pod)


def _links(findings: list[Finding]) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    return {item.id: (item.caused_by, item.consequences) for item in findings}


def test_causes_name_catalogued_codes_and_never_loop() -> None:
    for consequence, causes in CAUSES.items():
        assert {consequence, *causes} <= CATALOGUE.keys()
        assert consequence not in causes

    def reaches(code: str, target: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(
            cause == target or (cause not in seen and reaches(cause, target, seen | {cause}))
            for cause in CAUSES.get(code, ())
        )

    assert [code for code in CAUSES if reaches(code, code)] == []


def test_the_crash_looping_plugin_is_one_error_with_its_consequences_beneath() -> None:
    """The demo's gpu-ws-5: NVIDIA_VISIBLE_DEVICES names a GPU the node lacks, so the runtime
    cannot create the plugin's container; not ready and advertising nothing follow from it."""
    state = world(
        ds_kwargs={
            "env": {
                "NVIDIA_VISIBLE_DEVICES": SPLIT + ",GPU-elsewhere-9",
                "FAIL_ON_INIT_ERROR": "false",
            }
        },
        plugin_pod_kwargs={"ready": False, "waiting_reason": "CrashLoopBackOff"},
        allocatable=None,
    )
    snapshot = snap(state)
    root = "visible-device-not-on-node|gpu-1||"
    assert _links(snapshot.findings) == {
        "allocatable-mismatch|gpu-1||": (root, ()),
        "fail-on-init-silent-zero|gpu-1||": (root, ()),
        "plugin-pod-not-ready|gpu-1||": (root, ()),
        root: (
            None,
            (
                "allocatable-mismatch|gpu-1||",
                "fail-on-init-silent-zero|gpu-1||",
                "plugin-pod-not-ready|gpu-1||",
            ),
        ),
    }
    assert snapshot.nodes[0].findings == snapshot.findings  # the node's list says the same


def test_the_pod_state_is_the_badge_s_in_every_title_param() -> None:
    """Both findings word the plugin pod by the state its badge shows, not the bare phase."""
    state = world(
        ds_kwargs={"env": {"FAIL_ON_INIT_ERROR": "false"}},
        plugin_pod_kwargs={"ready": False, "waiting_reason": "CrashLoopBackOff"},
        allocatable=None,
    )
    snapshot = snap(state)
    badge = snapshot.nodes[0].plugin_pod
    assert badge is not None and badge.state == "CrashLoopBackOff"
    by_code = {item.code: item for item in snapshot.findings}
    assert by_code["plugin-pod-not-ready"].params["state"] == "CrashLoopBackOff"
    silent = by_code["fail-on-init-silent-zero"]
    assert (silent.params["state"], silent.params["variant"]) == ("CrashLoopBackOff", "not-ready")
    # with no other cause on the node, the pod that is not ready is the root
    assert silent.caused_by == by_code["plugin-pod-not-ready"].id


def test_a_pod_s_own_visible_devices_explain_its_process_without_a_slot() -> None:
    readings = [
        f.gpu(i, processes=[f.proc(77, mib=5000, pod_uid="uid-rogue")] if i == 0 else [])
        for i in range(4)
    ]
    rogue = f.pod("rogue", gpus=0, uid="uid-rogue", env={"NVIDIA_VISIBLE_DEVICES": "all"})
    snapshot = snap(world(pods=[rogue], readings=readings))
    assert _links(snapshot.findings) == {
        "pod-process-without-slot|gpu-1|GPU-gpu-1-0|ml/rogue": (
            "pod-sets-visible-devices|gpu-1||ml/rogue",
            (),
        ),
        "pod-sets-visible-devices|gpu-1||ml/rogue": (
            None,
            ("pod-process-without-slot|gpu-1|GPU-gpu-1-0|ml/rogue",),
        ),
    }


def test_findings_of_other_nodes_or_other_pods_never_link() -> None:
    findings = [
        _on("visible-device-not-on-node", "gpu-1"),
        _on("plugin-pod-not-ready", "gpu-2"),
        _on("pod-sets-visible-devices", "gpu-3", pod="ml/a"),
        _on("pod-process-without-slot", "gpu-3", pod="ml/b"),
    ]
    linked, _ = link_causes(findings, [])
    assert all(a is b for a, b in zip(linked, findings, strict=True))  # the same objects


def test_a_chain_links_every_consequence_to_its_first_cause() -> None:
    """requested-above-allocatable <- allocatable-mismatch <- runtime-class-missing: both name
    the root, and the root lists both (in the findings' order)."""
    findings = [
        _on("allocatable-mismatch"),
        _on("requested-above-allocatable"),
        _on("runtime-class-missing"),
        _on("slots-stranded"),  # no cause in the table: left alone
    ]
    linked, nodes = link_causes(findings, [])
    root = "runtime-class-missing|gpu-1||"
    assert _links(linked) == {
        "allocatable-mismatch|gpu-1||": (root, ()),
        "requested-above-allocatable|gpu-1||": (root, ()),
        root: (None, ("allocatable-mismatch|gpu-1||", "requested-above-allocatable|gpu-1||")),
        "slots-stranded|gpu-1||": (None, ()),
    }
    assert linked[3] is findings[3]
    assert nodes == []


def test_only_the_nodes_whose_findings_link_are_new_states() -> None:
    state = world(
        ds_kwargs={"env": {"FAIL_ON_INIT_ERROR": "false"}},
        plugin_pod_kwargs={"ready": False, "waiting_reason": "CrashLoopBackOff"},
        allocatable=None,
    )
    before = snap(state)
    unlinked = [
        item.model_copy(update={"caused_by": None, "consequences": ()}) for item in before.findings
    ]
    quiet = before.nodes[0].model_copy(update={"name": "other", "findings": []})
    nodes = [before.nodes[0].model_copy(update={"findings": unlinked}), quiet]
    linked, after = link_causes(unlinked, nodes)
    assert after[1] is quiet
    assert after[0].findings == linked == before.findings


def test_each_pod_s_process_links_to_that_pod_s_own_variable_among_hundreds() -> None:
    pods = [f"ml/p{n}" for n in range(400)]
    findings = [_on("pod-sets-visible-devices", pod=pod) for pod in pods]
    findings += [_on("pod-process-without-slot", pod=pod) for pod in reversed(pods)]
    linked, _ = link_causes(findings, [])
    causes = {item.pod: item.caused_by for item in linked if item.caused_by}
    assert causes == {pod: f"pod-sets-visible-devices|gpu-1||{pod}" for pod in pods}
