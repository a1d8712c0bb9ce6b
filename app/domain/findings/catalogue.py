"""The finding catalogue: every code the engine can raise, its severity and scope.

Codes are kebab-case and stable: the page links each one to docs/findings.md#<code>.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.snapshot import SEVERITY_RANK, EvidenceValue, Finding, Scope, Severity


@dataclass(frozen=True)
class FindingKind:
    code: str
    severity: Severity
    scope: Scope
    summary: str


def _kind(code: str, severity: Severity, scope: Scope, summary: str) -> FindingKind:
    return FindingKind(code, severity, scope, summary)


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO
_C, _N, _G, _P = Scope.CLUSTER, Scope.NODE, Scope.GPU, Scope.POD

CATALOGUE: dict[str, FindingKind] = {
    k.code: k
    for k in (
        # The plugin DaemonSet and its config (cluster scope).
        _kind("plugin-daemonset-missing", _E, _C, "The device-plugin DaemonSet does not exist"),
        _kind("plugin-operator-managed", _I, _C, "The GPU Operator manages the DaemonSet"),
        _kind("plugin-image-outdated", _I, _C, "Plugin image older than the platform's v0.18.2"),
        _kind("config-mounted-not-used", _W, _C, "ConfigMap mounted but CONFIG_FILE unset"),
        _kind("config-key-missing", _E, _C, "CONFIG_FILE points at a missing key or file"),
        _kind("plugin-config-rejected", _E, _C, "The plugin refuses its config at start"),
        _kind("config-label-unknown", _E, _N, "Node label names a config that does not exist"),
        _kind("config-changed-after-start", _W, _C, "ConfigMap changed after plugin pods started"),
        _kind("config-left-over", _I, _C, "Leftover plugin ConfigMap in basic mode"),
        _kind("serving-resource-mismatch", _E, _C, "Serving asks for a resource not advertised"),
        _kind("visible-devices-by-index", _W, _C, "NVIDIA_VISIBLE_DEVICES lists indexes"),
        _kind("visible-devices-list-on-many-nodes", _W, _C, "One UUID list over several nodes"),
        # Per node.
        _kind("plugin-missing-on-node", _E, _N, "GPU node without a device-plugin pod"),
        _kind("plugin-pod-not-ready", _E, _N, "Device-plugin pod not ready"),
        _kind("runtime-class-missing", _E, _N, "k3s node: plugin lacks runtimeClassName nvidia"),
        _kind("unified-memory-unsupported", _E, _N, "Plugin image lacks the unified-memory fix"),
        _kind("privileged-visible-devices-ignored", _E, _N, "Privileged plugin sees every GPU"),
        _kind("fail-on-init-silent-zero", _E, _N, "Plugin Running but advertising nothing"),
        _kind("unhealthy-devices", _W, _N, "Capacity above allocatable: unhealthy devices"),
        _kind("allocatable-mismatch", _E, _N, "Allocatable differs from the expected slots"),
        _kind("requested-above-allocatable", _W, _N, "Pods hold more slots than allocatable"),
        _kind("gfd-labels-disagree", _W, _N, "GPU feature discovery labels disagree"),
        _kind("visible-device-not-on-node", _E, _N, "Listed GPU UUID not present on the node"),
        _kind("agent-report-missing", _W, _N, "GPU node without an agent report"),
        _kind("agent-report-stale", _W, _N, "Agent report is stale"),
        _kind("agent-report-error", _W, _N, "Agent could not read the GPUs"),
        # The per-resource ledger (issue 12).
        _kind("slots-stranded", _I, _N, "Free slots on a node no new pod can be scheduled on"),
        _kind("gpu-double-booked", _E, _N, "Pods hold a GPU resource the node stopped advertising"),
        _kind("device-id-from-before-switch", _W, _P, "Pod holds a device ID of the old mode"),
        _kind("mps-daemon-missing", _E, _N, "MPS configured but no MPS control daemon runs"),
        _kind("gpu-demand-pending", _W, _C, "Pods wanting GPU resources cannot be scheduled"),
        _kind("config-namespace-not-read", _W, _N, "Plugin config in a namespace not read"),
        # Per GPU.
        # Error: a pod scheduled onto this "free" GPU meets the host's memory and dies (OOM).
        _kind("host-process-on-advertised-gpu", _E, _G, "Host process on an advertised GPU"),
        _kind(
            "host-memory-on-advertised-gpu", _W, _G, "Memory held outside pods on an advertised GPU"
        ),
        _kind("shared-gpu-memory-pressure", _W, _G, "Sharing pods near the GPU's memory"),
        _kind("pod-process-without-slot", _W, _G, "GPU process of a pod that requests no slot"),
        _kind("pod-process-on-unassigned-gpu", _W, _G, "Pod process on a GPU not assigned to it"),
        # GPU health against the accounting (app/domain/findings/health.py).
        _kind("gpu-fallen-off-bus", _E, _G, "GPU with slots has fallen off the bus (XID 79)"),
        _kind("gpu-unhealthy", _E, _G, "GPU with slots has uncorrected or pending memory errors"),
        _kind("gpu-throttled-hard", _W, _G, "GPU with slots throttled by a hardware slowdown"),
        # Per pod.
        _kind("pod-sets-visible-devices", _W, _P, "Pod sets NVIDIA_VISIBLE_DEVICES itself"),
        _kind("multi-slot-request-rejected", _E, _P, "Pod asks for 2+ slots; the plugin refuses"),
        _kind("multi-slot-request-shared", _W, _P, "Pod asks for 2+ time-sliced slots"),
        # GPU fractions (KAI scheduler / Run:ai annotations, app/domain/accounting/fractions).
        _kind("gpu-fractions-over-one", _E, _G, "Fraction pods ask for more than the whole GPU"),
        _kind("gpu-fraction-memory-over-limit", _W, _G, "Fraction pod uses more than its share"),
        _kind("gpu-fraction-unreserved", _W, _G, "GPU shared by fractions counted as free"),
        # Dynamic Resource Allocation (resource.k8s.io/v1, app/domain/dra).
        _kind("dra-and-device-plugin-on-node", _E, _N, "Node runs the DRA driver and the plugin"),
        _kind("dra-device-not-seen-by-agent", _W, _N, "DRA device the agent does not see"),
        _kind("dra-gpu-not-published", _W, _G, "GPU on a DRA node that no ResourceSlice lists"),
        _kind("dra-claim-on-lost-node", _E, _C, "Claim allocated on a gone or NotReady node"),
        _kind("dra-claim-unsatisfiable", _W, _C, "Pending claim that no device can satisfy"),
        _kind("dra-extended-resource-mapped", _I, _C, "nvidia.com/gpu requests become DRA claims"),
        _kind("dra-claim-idle", _I, _G, "Claim allocated but nothing runs on the GPU"),
        # Objects a tenant wrote whose numbers cannot be counted (app/domain/bounds).
        _kind("object-set-aside", _W, _C, "An object left out: a number it holds is refused"),
        # From the idle history (app/domain/usage), after the engine.
        _kind("slot-held-idle", _W, _P, "Pod holds a slot but runs nothing on the GPU"),
        _kind("gpu-utilization-low", _I, _G, "Held GPU under 1% utilization for a long time"),
    )
}


def finding(
    code: str,
    title: str,
    *,
    evidence: dict[str, EvidenceValue],
    remedy: str,
    node: str | None = None,
    gpu_uuid: str | None = None,
    pod: str | None = None,
    scope: Scope | None = None,
) -> Finding:
    """Build a finding of a catalogued code; evidence and remedy must say something."""
    kind = CATALOGUE[code]
    if not evidence or not remedy:
        raise ValueError(f"finding {code} needs evidence and a remedy")
    return Finding(
        code=code,
        severity=kind.severity,
        scope=scope or kind.scope,
        title=title,
        params={
            **evidence,
            **{k: v for k, v in (("node", node), ("gpu_uuid", gpu_uuid), ("pod", pod)) if v},
        },
        evidence=evidence,
        remedy=remedy,
        node=node,
        gpu_uuid=gpu_uuid,
        pod=pod,
    )


def sort_key(item: Finding) -> tuple[int, str, str, str, str]:
    """Severity, then node (cluster-wide first), then code, GPU and pod."""
    return (
        SEVERITY_RANK[item.severity],
        item.node or "",
        item.code,
        item.gpu_uuid or "",
        item.pod or "",
    )
