"""Findings about one node: its plugin pod, what it advertises, its labels and its agent."""

from __future__ import annotations

from app.domain.cluster import Manifest
from app.domain.facts import ClusterFacts, NodeFacts
from app.domain.findings_base import finding
from app.domain.findings_cluster import FIXED_IMAGE, ds_ref
from app.domain.plugin import UNIFIED_MEMORY_FIX, ConfigManagerRef, PluginSpec
from app.domain.snapshot import Finding, Mode

_STRATEGY_LABEL = {Mode.BASIC: "none", Mode.TIME_SLICING: "time-slicing", Mode.MPS: "mps"}


def node_findings(facts: ClusterFacts, node: NodeFacts) -> list[Finding]:
    found = _agent(facts, node)
    spec = facts.spec
    if spec is None or not node.gpu_node:
        return found
    found += _plugin_pod(spec, node)
    found += _config(spec, node)
    found += _advertised(facts, spec, node)
    found += _labels(node)
    return found


def _agent(facts: ClusterFacts, node: NodeFacts) -> list[Finding]:
    if not node.gpu_node:
        return []
    ns = facts.spec.namespace if facts.spec else facts.options.plugin_namespace
    if node.agent is None:
        return [
            finding(
                "agent-report-missing",
                f"No agent report from {node.name}: physical GPUs and processes are unknown",
                evidence={"node": node.name, "report": None},
                remedy=(
                    "deploy the gpu-slots agent on this node (chart value agent.enabled=true) "
                    "and check: kubectl get pods -A -o wide "
                    f"--field-selector spec.nodeName={node.name}"
                ),
                node=node.name,
            )
        ]
    found = []
    if not node.agent.fresh:
        found.append(
            finding(
                "agent-report-stale",
                f"Agent report from {node.name} is {int(node.agent.age_s)} s old",
                evidence={
                    "age_s": round(node.agent.age_s, 1),
                    "stale_after_s": facts.options.agent_stale_after_s,
                    "received_at": node.agent.received_at.isoformat(),
                },
                remedy=(
                    f"check the agent pod on {node.name}: kubectl get pods -A -o wide "
                    f"--field-selector spec.nodeName={node.name}  # (plugin namespace: {ns})"
                ),
                node=node.name,
            )
        )
    if node.agent.source == "none":
        found.append(
            finding(
                "agent-report-error",
                f"The agent on {node.name} could not read its GPUs",
                evidence={"source": "none", "error": node.agent.error or "unknown"},
                remedy="check the NVIDIA driver on the node: nvidia-smi; and the agent's logs",
                node=node.name,
            )
        )
    return found


def _waiting_reason(pod: Manifest) -> str | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting")
        if waiting:
            return str(waiting.get("reason", "Waiting"))
    return None


def _plugin_pod(spec: PluginSpec, node: NodeFacts) -> list[Finding]:
    pod = node.plugin_pod_state
    if pod is None:
        return [
            finding(
                "plugin-missing-on-node",
                f"GPU node {node.name} has no {spec.name} pod: it advertises no GPUs",
                evidence={
                    "node": node.name,
                    "plugin_pod": None,
                    "ready": spec.ready,
                    "desired": spec.desired,
                },
                remedy=(
                    f"kubectl -n {spec.namespace} get daemonset {spec.name} -o "
                    "jsonpath='{.spec.template.spec.nodeSelector}'  # and compare with: "
                    f"kubectl get node {node.name} --show-labels"
                ),
                node=node.name,
            )
        ]
    if pod.ready:
        return []
    return [
        finding(
            "plugin-pod-not-ready",
            f"Plugin pod {pod.name} on {node.name} is not ready ({pod.phase})",
            evidence={
                "pod": pod.name,
                "phase": pod.phase,
                "ready": False,
                "waiting_reason": _waiting_reason(node.plugin_pod) if node.plugin_pod else None,
            },
            remedy=f"kubectl -n {spec.namespace} logs {pod.name} --all-containers",
            node=node.name,
        )
    ]


def _config(spec: PluginSpec, node: NodeFacts) -> list[Finding]:
    ref = spec.config_ref
    if not isinstance(ref, ConfigManagerRef) or node.config.error_code is None:
        return []
    config = node.config
    label = node.labels.get(ref.node_label)
    if config.error_code == "config-label-unknown":
        return [
            finding(
                "config-label-unknown",
                f"{node.name} is labelled {ref.node_label}={label}, which {ref.configmap} lacks",
                evidence={"label": label, "configmap": ref.configmap, "error": config.error},
                remedy=(
                    f"kubectl label node {node.name} {ref.node_label}=<existing key> --overwrite"
                ),
                node=node.name,
            )
        ]
    return [
        finding(
            config.error_code or "config-invalid",
            f"The plugin on {node.name} cannot start with its config",
            evidence={"source": config.source, "key": config.key, "error": config.error},
            remedy=(
                f"kubectl -n {spec.namespace} edit configmap {ref.configmap}  "
                f"# then: kubectl rollout restart {ds_ref(spec)}"
            ),
            node=node.name,
        )
    ]


def _advertised(facts: ClusterFacts, spec: PluginSpec, node: NodeFacts) -> list[Finding]:
    found: list[Finding] = []
    allocatable = node.allocatable or 0
    capacity = node.capacity or 0
    expected = node.expected_slots
    short = expected is not None and allocatable < expected
    if node.k3s and spec.runtime_class_name is None and (short or capacity == 0):
        found.append(
            finding(
                "runtime-class-missing",
                f"k3s node {node.name}: the plugin has no runtimeClassName nvidia and "
                f"advertises {allocatable}",
                evidence={
                    "kubelet_version": str(
                        ((node.manifest.get("status") or {}).get("nodeInfo") or {}).get(
                            "kubeletVersion", ""
                        )
                    ),
                    "runtime_class_name": None,
                    "allocatable": allocatable,
                    "expected_slots": expected,
                },
                remedy=(
                    f"kubectl -n {spec.namespace} patch daemonset {spec.name} --type merge -p "
                    '\'{"spec":{"template":{"spec":{"runtimeClassName":"nvidia"}}}}\''
                ),
                node=node.name,
            )
        )
    no_memory = [g for g in node.gpus if g.reading.memory_total_mib is None]
    if no_memory and spec.version is not None and spec.version < UNIFIED_MEMORY_FIX:
        found.append(
            finding(
                "unified-memory-unsupported",
                f"Plugin {spec.version_text} crashes on {node.name}: its GPU memory is "
                "Not Supported (unified memory) and the fix is in v0.17.4 / v0.18.0+",
                evidence={
                    "version": spec.version_text,
                    "gpu": no_memory[0].reading.name,
                    "memory_total_mib": None,
                    "fixed_in": "v0.17.4",
                },
                remedy=f"kubectl set image {ds_ref(spec)} {spec.container}={FIXED_IMAGE}",
                node=node.name,
            )
        )
    vis = node.visibility
    physical = node.physical_gpus
    if (
        spec.privileged
        and vis is not None
        and vis.restricted
        and physical is not None
        and node.visible_gpus is not None
        and physical != node.visible_gpus
        and capacity == physical * node.replicas
    ):
        found.append(
            finding(
                "privileged-visible-devices-ignored",
                f"{node.name} advertises all {physical} GPUs: the privileged plugin ignores "
                "its NVIDIA_VISIBLE_DEVICES",
                evidence={
                    "privileged": True,
                    "NVIDIA_VISIBLE_DEVICES": spec.visible_devices,
                    "visible_gpus": node.visible_gpus,
                    "physical_gpus": physical,
                    "capacity": capacity,
                },
                remedy=(
                    f"kubectl -n {spec.namespace} patch daemonset {spec.name} --type json -p "
                    '\'[{"op":"remove","path":"/spec/template/spec/containers/0/'
                    "securityContext/privileged\"}]'"
                ),
                node=node.name,
            )
        )
    config = node.config.config
    pod = node.plugin_pod_state
    has_gpus = (physical or 0) > 0 or node.labels.get("nvidia.com/gpu.present") == "true"
    if (
        config is not None
        and not config.fail_on_init_error
        and pod is not None
        and pod.phase == "Running"
        and capacity == 0
        and has_gpus
    ):
        found.append(
            finding(
                "fail-on-init-silent-zero",
                f"Plugin on {node.name} is Running but advertises nothing "
                "(FAIL_ON_INIT_ERROR=false hides its init error)",
                evidence={
                    "fail_on_init_error": False,
                    "phase": pod.phase,
                    "capacity": capacity,
                    "physical_gpus": physical,
                },
                remedy=(
                    f"kubectl -n {spec.namespace} logs {pod.name}  # then: kubectl set env "
                    f"{ds_ref(spec)} -c {spec.container} FAIL_ON_INIT_ERROR=true"
                ),
                node=node.name,
            )
        )
    unhealthy = (
        node.capacity is not None and node.allocatable is not None and capacity > allocatable
    )
    if unhealthy:
        found.append(
            finding(
                "unhealthy-devices",
                f"{node.name}: {capacity - allocatable} of {capacity} {node.resource} "
                "devices are unhealthy",
                evidence={
                    "capacity": capacity,
                    "allocatable": allocatable,
                    "resource": node.resource,
                },
                remedy=(
                    f"check XID errors: kubectl -n {spec.namespace} logs "
                    f"{pod.name if pod else '<plugin pod>'}; then: kubectl -n {spec.namespace} "
                    f"delete pod {pod.name if pod else '<plugin pod>'}  # unhealthy is permanent "
                    "until the plugin restarts"
                ),
                node=node.name,
            )
        )
    explained = unhealthy and capacity == expected
    if expected is not None and allocatable != expected and not explained:
        found.append(
            finding(
                "allocatable-mismatch",
                f"{node.name} advertises {allocatable} {node.resource}, expected {expected}",
                evidence={
                    "allocatable": allocatable,
                    "expected_slots": expected,
                    "visible_gpus": node.visible_gpus,
                    "replicas": node.replicas,
                    "resource": node.resource,
                },
                remedy=f"kubectl rollout restart {ds_ref(spec)}  # after fixing the cause above",
                node=node.name,
            )
        )
    if node.allocatable is not None and node.requested > node.allocatable:
        found.append(
            finding(
                "requested-above-allocatable",
                f"Pods on {node.name} hold {node.requested} {node.resource}, "
                f"more than the {node.allocatable} allocatable",
                evidence={
                    "requested": node.requested,
                    "allocatable": node.allocatable,
                    "resource": node.resource,
                },
                remedy=(
                    f"kubectl get pods -A --field-selector spec.nodeName={node.name}  "
                    "# drain and reschedule the pods started before the config change"
                ),
                node=node.name,
            )
        )
    found += _visible_missing(spec, node)
    return found


def _visible_missing(spec: PluginSpec, node: NodeFacts) -> list[Finding]:
    vis = node.visibility
    if vis is None or not vis.unmatched or not node.has_gpu_data:
        return []
    return [
        finding(
            "visible-device-not-on-node",
            f"NVIDIA_VISIBLE_DEVICES lists {len(vis.unmatched)} device(s) not on {node.name}: "
            "the plugin container cannot start there",
            evidence={
                "missing": ",".join(vis.unmatched),
                "node_gpus": ",".join(g.uuid for g in node.gpus),
            },
            remedy=(
                f"kubectl set env {ds_ref(spec)} -c {spec.container} NVIDIA_VISIBLE_DEVICES="
                + (",".join(sorted(vis.uuids)) or "<this node's GPU UUIDs>")
            ),
            node=node.name,
        )
    ]


def _labels(node: NodeFacts) -> list[Finding]:
    config = node.config.config
    if config is None or any(g.reading.mig_mode == "enabled" for g in node.gpus):
        return []
    replicas = node.labels.get("nvidia.com/gpu.replicas")
    strategy = node.labels.get("nvidia.com/gpu.sharing-strategy")
    want_strategy = _STRATEGY_LABEL.get(config.mode, "none")
    if config.replicas == 1:
        want_strategy = "none"
    bad_replicas = replicas is not None and replicas != str(config.replicas)
    bad_strategy = strategy is not None and strategy != want_strategy
    if not (bad_replicas or bad_strategy):
        return []
    return [
        finding(
            "gfd-labels-disagree",
            f"{node.name}'s GPU feature discovery labels describe another config",
            evidence={
                "label_replicas": replicas,
                "config_replicas": config.replicas,
                "label_sharing_strategy": strategy,
                "config_sharing_strategy": want_strategy,
            },
            remedy=(
                "restart gpu-feature-discovery so it reloads the config: kubectl rollout "
                "restart -n <gfd namespace> daemonset/gpu-feature-discovery"
            ),
            node=node.name,
        )
    ]
