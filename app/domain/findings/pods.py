"""Findings about single pods: requests and env that defeat the slot accounting."""

from __future__ import annotations

from app.domain.accounting.facts import ClusterFacts
from app.domain.accounting.pods import TERMINAL_PHASES
from app.domain.findings.catalogue import finding
from app.domain.findings.shell import sh
from app.domain.snapshot import EvidenceValue, Finding, Mode

_HARMLESS_VISIBLE = ("", "void", "none")


def pod_findings(facts: ClusterFacts) -> list[Finding]:
    nodes = {n.name: n for n in facts.nodes}
    default = facts.default_config.config
    plugin_uids = {str((p.get("metadata") or {}).get("uid", "")) for p in facts.plugin_pods}
    found: list[Finding] = []
    for uid, pod in facts.pod_facts.items():
        phase = pod.phase
        failed_admission = pod.failed_admission
        if phase in TERMINAL_PHASES and not failed_admission:
            continue
        node_name = pod.node
        node = nodes.get(node_name) if node_name else None
        key = pod.key
        if not failed_admission and uid not in plugin_uids and not pod.daemon:
            value = pod.visible_devices
            if value is not None and value.strip().lower() not in _HARMLESS_VISIBLE:
                found.append(_sets_visible(key, node_name, value))
        config = node.config.config if node is not None else default
        if config is None or config.mode not in (Mode.TIME_SLICING, Mode.MPS):
            continue
        slots = facts.slots_by_uid.get(uid, {}).get(config.resource, 0)
        if slots > 1:
            found.append(
                _multi_slot(
                    key,
                    node_name,
                    slots,
                    config.mode,
                    rejected=(config.fail_requests_greater_than_one),
                    resource=config.resource,
                    phase=phase,
                )
            )
    return found


def _sets_visible(key: str, node: str | None, value: str) -> Finding:
    namespace, _, name = key.partition("/")
    return finding(
        "pod-sets-visible-devices",
        f"Pod {key} sets NVIDIA_VISIBLE_DEVICES={value}: it reaches GPUs the scheduler "
        "never gave it",
        evidence={"pod": key, "NVIDIA_VISIBLE_DEVICES": value},
        remedy=(
            f"kubectl -n {sh(namespace)} get pod {sh(name)} -o yaml  # remove "
            "NVIDIA_VISIBLE_DEVICES from its env and request nvidia.com/gpu in "
            "resources.limits instead"
        ),
        node=node,
        pod=key,
    )


def _multi_slot(
    key: str,
    node: str | None,
    slots: int,
    mode: Mode,
    *,
    rejected: bool,
    resource: str,
    phase: str,
) -> Finding:
    namespace, _, name = key.partition("/")
    evidence: dict[str, EvidenceValue] = {
        "pod": key,
        "requested_slots": slots,
        "resource": resource,
        "mode": mode.value,
        "fail_requests_greater_than_one": rejected,
        "phase": phase,
    }
    if rejected:
        return finding(
            "multi-slot-request-rejected",
            f"Pod {key} asks for {slots} {resource}; the plugin refuses more than one "
            "shared slot (UnexpectedAdmissionError)",
            evidence=evidence,
            remedy=(
                f"kubectl -n {sh(namespace)} delete pod {sh(name)}  "
                f"# and request {sh(resource)}: 1 (2 slots are not 2 GPUs)"
            ),
            node=node,
            pod=key,
        )
    return finding(
        "multi-slot-request-shared",
        f"Pod {key} asks for {slots} time-sliced {resource}: it may get {slots} replicas "
        "of the same GPU, not more compute",
        evidence=evidence,
        remedy=(
            f"request {sh(resource)}: 1 in pod {sh(key)}, or set failRequestsGreaterThanOne: true "
            "in the plugin config to refuse such pods"
        ),
        node=node,
        pod=key,
    )
