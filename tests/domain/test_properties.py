"""Properties of the snapshot over generated clusters."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.domain.cluster import ClusterState
from app.domain.engine.build import build_snapshot
from app.domain.snapshot import Snapshot
from app.web.views.finding_text import finding_title, remedy_text
from tests import factories as f

PHASES = ["Running", "Pending", "Succeeded", "Failed"]


@st.composite
def clusters(draw: st.DrawFn) -> ClusterState:
    node_count = draw(st.integers(min_value=0, max_value=4))
    replicas = draw(st.sampled_from([1, 2, 4]))
    rename = draw(st.booleans()) and replicas > 1
    resource = "nvidia.com/gpu.shared" if rename else "nvidia.com/gpu"
    nodes, reports, pods, plugin_pods = [], [], [], []
    for n in range(node_count):
        name = f"gpu-{n}"
        allocatable = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=32)))
        capacity = None
        if allocatable is not None:
            capacity = allocatable + draw(st.integers(min_value=0, max_value=2))
        nodes.append(
            f.node(
                name,
                allocatable=allocatable,
                capacity=capacity,
                resource=resource,
                k3s=draw(st.booleans()),
            )
        )
        if draw(st.booleans()):
            plugin_pods.append(f.plugin_pod(name, ready=draw(st.booleans())))
        if draw(st.booleans()):
            readings = []
            for i in range(draw(st.integers(min_value=0, max_value=4))):
                procs = [
                    f.proc(
                        1000 + i * 10 + k,
                        mib=draw(st.integers(min_value=0, max_value=40000)),
                        pod_uid=draw(st.sampled_from([None, f"uid-{name}-p0", "uid-unknown"])),
                    )
                    for k in range(draw(st.integers(min_value=0, max_value=2)))
                ]
                readings.append(
                    f.gpu(
                        i,
                        node_name=name,
                        processes=procs,
                        memory_total_mib=draw(st.sampled_from([None, 81920])),
                    )
                )
            age = draw(st.integers(min_value=0, max_value=600))
            reports.append(
                f.report(
                    name,
                    readings,
                    received_at=f.NOW - timedelta(seconds=age),
                    source=draw(st.sampled_from(["nvml", "none"])),
                )
            )
        for p in range(draw(st.integers(min_value=0, max_value=4))):
            pods.append(
                f.pod(
                    f"p{p}",
                    namespace=name,
                    uid=f"uid-{name}-p{p}",
                    node=draw(st.sampled_from([name, None])),
                    gpus=draw(st.integers(min_value=0, max_value=3)),
                    resource=resource,
                    phase=draw(st.sampled_from(PHASES)),
                    env=draw(st.sampled_from([None, {"NVIDIA_VISIBLE_DEVICES": "all"}])),
                )
            )
    daemonset = None
    configmaps = []
    if draw(st.booleans()):
        env = {}
        if draw(st.booleans()) and node_count:
            env["NVIDIA_VISIBLE_DEVICES"] = f"{f.gpu_uuid('gpu-0', 0)},{f.gpu_uuid('gpu-0', 1)}"
        if replicas > 1:
            configmaps.append(
                f.configmap({"config.yaml": f.time_slicing_yaml(replicas, rename=rename)})
            )
            daemonset = f.plugin_daemonset(
                env=env,
                configmap=f.CONFIGMAP,
                config_file="/config/config.yaml",
                runtime_class=draw(st.sampled_from([None, "nvidia"])),
            )
        else:
            daemonset = f.plugin_daemonset(env=env, privileged=draw(st.booleans()))
    return f.cluster(
        daemonset=daemonset,
        configmaps=configmaps,
        nodes=nodes,
        pods=[*plugin_pods, *pods],
        reports=reports,
    )


def _snap(state: ClusterState) -> Snapshot:
    return build_snapshot(state, options=f.OPTIONS, now=f.NOW)


_SETTINGS = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(clusters())
def test_free_is_schedulable_spare_never_negative(state: ClusterState) -> None:
    for node in _snap(state).nodes:
        if node.allocatable is None:
            assert node.free is None
        else:
            spare = max(node.allocatable - node.requested, 0)
            assert node.free == (spare if node.schedulable else 0)
            assert node.stranded == (0 if node.schedulable else spare)


@_SETTINGS
@given(clusters())
def test_totals_equal_sum_over_nodes(state: ClusterState) -> None:
    result = _snap(state)
    nodes = result.nodes
    assert result.totals.physical_gpus == sum(n.physical_gpus or 0 for n in nodes)
    assert result.totals.visible_gpus == sum(n.visible_gpus or 0 for n in nodes)
    assert result.totals.host_gpus == sum(n.host_gpus or 0 for n in nodes)
    assert result.totals.allocatable == sum(n.allocatable or 0 for n in nodes)
    assert result.totals.requested == sum(n.requested for n in nodes)
    assert result.totals.free == sum(n.free or 0 for n in nodes)


@_SETTINGS
@given(clusters())
def test_every_finding_has_evidence_and_remedy(state: ClusterState) -> None:
    result = _snap(state)
    for item in result.findings:
        assert item.evidence
        assert remedy_text(item, "en").strip()
        assert finding_title(item, "en").strip()
    node_codes = {(f.code, f.node, f.gpu_uuid, f.pod) for n in result.nodes for f in n.findings}
    assert node_codes <= {(f.code, f.node, f.gpu_uuid, f.pod) for f in result.findings}


@_SETTINGS
@given(clusters())
def test_gpu_counts_add_up(state: ClusterState) -> None:
    for node in _snap(state).nodes:
        if node.physical_gpus is not None and node.visible_gpus is not None:
            assert node.host_gpus == node.physical_gpus - node.visible_gpus
            assert node.host_gpus >= 0
        for gpu in node.gpus:
            assert gpu.held_slots <= gpu.slots  # inferred holders never overfill a GPU
            assert gpu.memory_pods_mib >= 0 and gpu.memory_host_mib >= 0
