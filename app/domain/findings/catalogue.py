"""The finding catalogue: every code the engine can raise, its severity and scope.

The words of each code (summary, title, what to do) are the web layer's: one entry per
language in app/i18n/locale/<lang>/LC_MESSAGES/messages.po.

Codes are kebab-case and stable: the page links each one to docs/findings.md#<code>.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.findings.remedies import Remedy
from app.domain.snapshot import SEVERITY_RANK, EvidenceValue, Finding, Scope, Severity


@dataclass(frozen=True)
class FindingKind:
    code: str
    severity: Severity
    scope: Scope


def _kind(code: str, severity: Severity, scope: Scope) -> FindingKind:
    return FindingKind(code, severity, scope)


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO
_C, _N, _G, _P = Scope.CLUSTER, Scope.NODE, Scope.GPU, Scope.POD

CATALOGUE: dict[str, FindingKind] = {
    k.code: k
    for k in (
        # The plugin DaemonSet and its config (cluster scope).
        _kind("plugin-daemonset-missing", _E, _C),
        _kind("plugin-operator-managed", _I, _C),
        _kind("plugin-image-outdated", _I, _C),
        _kind("config-mounted-not-used", _W, _C),
        _kind("config-key-missing", _E, _C),
        _kind("plugin-config-rejected", _E, _C),
        _kind("config-label-unknown", _E, _N),
        _kind("config-changed-after-start", _W, _C),
        _kind("config-left-over", _I, _C),
        _kind("serving-resource-mismatch", _E, _C),
        _kind("visible-devices-by-index", _W, _C),
        _kind("visible-devices-list-on-many-nodes", _W, _C),
        # Per node.
        _kind("plugin-missing-on-node", _E, _N),
        _kind("advertised-without-plugin", _E, _N),
        _kind("plugin-pod-not-ready", _E, _N),
        _kind("runtime-class-missing", _E, _N),
        _kind("unified-memory-unsupported", _E, _N),
        _kind("privileged-visible-devices-ignored", _E, _N),
        _kind("fail-on-init-silent-zero", _E, _N),
        _kind("unhealthy-devices", _W, _N),
        _kind("allocatable-mismatch", _E, _N),
        _kind("requested-above-allocatable", _W, _N),
        _kind("gfd-labels-disagree", _W, _N),
        _kind("visible-device-not-on-node", _E, _N),
        _kind("agent-report-missing", _W, _N),
        _kind("agent-report-stale", _W, _N),
        _kind("agent-report-error", _W, _N),
        # The per-resource ledger (issue 12).
        _kind("slots-stranded", _I, _N),
        _kind("gpu-double-booked", _E, _N),
        _kind("device-id-from-before-switch", _W, _P),
        _kind("mps-daemon-missing", _E, _N),
        _kind("gpu-demand-pending", _W, _C),
        _kind("config-namespace-not-read", _W, _N),
        # Per GPU.
        # Error: a pod scheduled onto this "free" GPU meets the host's memory and dies (OOM).
        _kind("host-process-on-advertised-gpu", _E, _G),
        _kind("host-memory-on-advertised-gpu", _W, _G),
        _kind("shared-gpu-memory-pressure", _W, _G),
        _kind("pod-process-without-slot", _W, _G),
        _kind("pod-process-on-unassigned-gpu", _W, _G),
        # GPU health against the accounting (app/domain/findings/health.py).
        _kind("gpu-fallen-off-bus", _E, _G),
        _kind("gpu-unhealthy", _E, _G),
        _kind("gpu-throttled-hard", _W, _G),
        # Per pod.
        _kind("pod-sets-visible-devices", _W, _P),
        _kind("multi-slot-request-rejected", _E, _P),
        _kind("multi-slot-request-shared", _W, _P),
        # GPU fractions (KAI scheduler / Run:ai annotations, app/domain/accounting/fractions).
        _kind("gpu-fractions-over-one", _E, _G),
        _kind("gpu-fraction-memory-over-limit", _W, _G),
        _kind("gpu-fraction-unreserved", _W, _G),
        # Dynamic Resource Allocation (resource.k8s.io/v1, app/domain/dra).
        _kind("dra-and-device-plugin-on-node", _E, _N),
        _kind("dra-device-not-seen-by-agent", _W, _N),
        _kind("dra-gpu-not-published", _W, _G),
        _kind("dra-claim-on-lost-node", _E, _C),
        _kind("dra-claim-unsatisfiable", _W, _C),
        _kind("dra-extended-resource-mapped", _I, _C),
        _kind("dra-claim-idle", _I, _G),
        # Objects a tenant wrote whose numbers cannot be counted (app/domain/bounds).
        _kind("object-set-aside", _W, _C),
        # From the idle history (app/domain/usage), after the engine.
        _kind("slot-held-idle", _W, _P),
        _kind("gpu-utilization-low", _I, _G),
    )
}


def finding(
    code: str,
    *,
    evidence: dict[str, EvidenceValue],
    remedy: str | Remedy,
    words: dict[str, EvidenceValue] | None = None,
    node: str | None = None,
    gpu_uuid: str | None = None,
    pod: str | None = None,
    scope: Scope | None = None,
) -> Finding:
    """Build a finding of a catalogued code; evidence and remedy must say something.

    The domain words nothing: the web layer words the title from the code and `params`
    (the evidence, `words`: values only the title needs, such as a count or a `variant`
    code naming which title of the code applies, and node, gpu_uuid, pod), and the remedy
    from its code and params next to its command (a plain `str` remedy is a command alone).
    """
    kind = CATALOGUE[code]
    fix = Remedy(remedy) if isinstance(remedy, str) else remedy
    if not evidence or not (fix.command or fix.code):
        raise ValueError(f"finding {code}: evidence={len(evidence)} remedy={fix!r}")
    return Finding(
        code=code,
        severity=kind.severity,
        scope=scope or kind.scope,
        params={
            **evidence,
            **{k: v for k, v in (words or {}).items() if v is not None},
            **{k: v for k, v in (("node", node), ("gpu_uuid", gpu_uuid), ("pod", pod)) if v},
        },
        evidence=evidence,
        remedy=fix.command,
        remedy_command=fix.command,
        remedy_code=fix.code,
        remedy_params=dict(fix.params),
        node=node,
        gpu_uuid=gpu_uuid,
        pod=pod,
    )


def gpu_finding(
    code: str, evidence: dict[str, EvidenceValue], fix: str | Remedy, *, node: str, gpu: str
) -> Finding:
    """A finding about one GPU of `node` (its UUID `gpu`)."""
    return finding(code, evidence=evidence, remedy=fix, node=node, gpu_uuid=gpu)


def sort_key(item: Finding) -> tuple[int, str, str, str, str]:
    """Severity, then node (cluster-wide first), then code, GPU and pod."""
    return (
        SEVERITY_RANK[item.severity],
        item.node or "",
        item.code,
        item.gpu_uuid or "",
        item.pod or "",
    )
