"""Findings about one node: its plugin pod, what it advertises, its labels and its agent."""

from __future__ import annotations

from app.domain.accounting.facts import ClusterFacts, NodeFacts
from app.domain.cluster import Manifest
from app.domain.findings.advertised import advertised_findings
from app.domain.findings.catalogue import finding
from app.domain.findings.cluster import ds_ref
from app.domain.findings.remedies import remedy
from app.domain.findings.resources import resource_findings
from app.domain.findings.shell import sh
from app.domain.plugin.daemonset import ConfigManagerRef, PluginSpec, StaticConfigRef
from app.domain.plugin.effective import rules_version_text
from app.domain.snapshot import Finding, Mode

_STRATEGY_LABEL = {Mode.BASIC: "none", Mode.TIME_SLICING: "time-slicing", Mode.MPS: "mps"}


def node_findings(facts: ClusterFacts, node: NodeFacts) -> list[Finding]:
    found = _agent(facts, node)
    spec = node.spec or facts.spec
    if spec is None or not node.gpu_node:
        return found
    found += _plugin_pod(spec, node)
    found += _config(spec, node, main=spec is facts.spec)
    found += advertised_findings(spec, node, target=facts.options.plugin)
    found += resource_findings(spec, node)
    found += _labels(node)
    return found


def _agent(facts: ClusterFacts, node: NodeFacts) -> list[Finding]:
    if not node.gpu_node:
        return []
    ns = facts.spec.namespace if facts.spec else facts.options.plugin.namespace
    pods = f"kubectl get pods -A -o wide --field-selector {sh('spec.nodeName=' + node.name)}"
    if node.agent is None:
        return [
            finding(
                "agent-report-missing",
                evidence={"node": node.name, "report": None},
                remedy=remedy(pods, "deploy-agent"),
                node=node.name,
            )
        ]
    found = []
    if not node.agent.fresh:
        found.append(
            finding(
                "agent-report-stale",
                evidence={
                    "age_s": round(node.agent.age_s, 1),
                    "stale_after_s": facts.options.agent_stale_after_s,
                    "received_at": node.agent.received_at.isoformat(),
                },
                words={"age": int(node.agent.age_s)},
                remedy=remedy(pods, "check-agent", node=node.name, namespace=ns),
                node=node.name,
            )
        )
    if node.agent.source == "none":
        found.append(
            finding(
                "agent-report-error",
                evidence={"source": "none", "error": node.agent.error or "unknown"},
                remedy=remedy("nvidia-smi", "check-driver", node=node.name),
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


def _advertised_without_plugin(spec: PluginSpec, node: NodeFacts, allocatable: int) -> Finding:
    """No plugin pod, yet the kubelet advertises the resource: it kept a gone plugin's
    devices (a kubelet that lost a re-registered plugin keeps them until it restarts,
    kubernetes/kubernetes#121994); pods placed here fail at admission."""
    return finding(
        "advertised-without-plugin",
        evidence={
            "node": node.name,
            "plugin_pod": None,
            "resource": node.resource,
            "allocatable": allocatable,
        },
        words={"count": allocatable, "resource": node.resource, "name": spec.name},
        remedy=remedy("sudo systemctl restart kubelet", "restart-kubelet", node=node.name),
        node=node.name,
    )


def _plugin_pod(spec: PluginSpec, node: NodeFacts) -> list[Finding]:
    pod = node.plugin_pod_state
    if pod is None and node.allocatable:
        return [_advertised_without_plugin(spec, node, node.allocatable)]
    if pod is None:
        return [
            finding(
                "plugin-missing-on-node",
                evidence={
                    "node": node.name,
                    "plugin_pod": None,
                    "ready": spec.ready,
                    "desired": spec.desired,
                },
                words={"name": spec.name},
                remedy=remedy(
                    f"kubectl -n {sh(spec.namespace)} get daemonset {sh(spec.name)} -o "
                    "jsonpath='{.spec.template.spec.nodeSelector}'; "
                    f"kubectl get node {sh(node.name)} --show-labels",
                    "compare-node-selector",
                ),
                node=node.name,
            )
        ]
    if pod.ready:
        return []
    return [
        finding(
            "plugin-pod-not-ready",
            evidence={
                "pod": pod.name,
                "phase": pod.phase,
                "ready": False,
                "waiting_reason": _waiting_reason(node.plugin_pod) if node.plugin_pod else None,
            },
            words={"state": pod.state or pod.phase},  # what the node's badge says
            remedy=f"kubectl -n {sh(spec.namespace)} logs {sh(pod.name)} --all-containers",
            node=node.name,
        )
    ]


def _config(spec: PluginSpec, node: NodeFacts, *, main: bool) -> list[Finding]:
    ref = spec.config_ref
    config = node.config
    if config.error_code is None:
        return []
    if config.error_code == "config-namespace-not-read":
        return [
            finding(
                "config-namespace-not-read",
                evidence={"daemonset": spec.ref, "source": config.source, "error": config.error},
                words={"namespace": spec.namespace},
                remedy=remedy(
                    "helm upgrade gpu-slots chart/ --reuse-values --set "
                    f"'plugin.configNamespaces={{{spec.namespace}}}'",
                    "config-namespaces-setting",
                ),
                node=node.name,
            )
        ]
    if not isinstance(ref, ConfigManagerRef) and main:
        return []  # the main DaemonSet's static config errors are cluster findings
    if not isinstance(ref, ConfigManagerRef | StaticConfigRef):
        return []
    if isinstance(ref, ConfigManagerRef) and config.error_code == "config-label-unknown":
        label = node.labels.get(ref.node_label)
        return [
            finding(
                "config-label-unknown",
                evidence={"label": label, "configmap": ref.configmap, "error": config.error},
                remedy=(
                    f"kubectl label node {sh(node.name)} {sh(ref.node_label)}=<existing key> "
                    "--overwrite"
                ),
                node=node.name,
            )
        ]
    return [
        finding(
            config.error_code or "plugin-config-rejected",
            evidence={
                "source": config.source,
                "key": config.key,
                "error": config.error,
                "plugin_version": rules_version_text(spec),
            },
            remedy=(
                f"kubectl -n {sh(spec.namespace)} edit configmap {sh(ref.configmap)}; "
                f"kubectl rollout restart {ds_ref(spec)}"
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
            evidence={
                "label_replicas": replicas,
                "config_replicas": config.replicas,
                "label_sharing_strategy": strategy,
                "config_sharing_strategy": want_strategy,
            },
            remedy=remedy(
                "kubectl rollout restart -n <gfd-namespace> daemonset/gpu-feature-discovery",
                "restart-gfd",
            ),
            node=node.name,
        )
    ]
