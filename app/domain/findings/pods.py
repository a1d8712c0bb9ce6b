"""Findings about single pods: requests and env that defeat the slot accounting."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.domain.accounting.facts import ClusterFacts
from app.domain.accounting.pods import TERMINAL_PHASES, PodFacts
from app.domain.cluster import Manifest
from app.domain.findings.catalogue import finding
from app.domain.findings.remedies import remedy
from app.domain.findings.shell import sh
from app.domain.plugin.config import PluginConfig
from app.domain.snapshot import EvidenceValue, Finding, Mode

_HARMLESS_VISIBLE = ("", "void", "none")


def pod_findings(
    facts: ClusterFacts, *, configs: Mapping[str, PluginConfig | None]
) -> list[Finding]:
    """Every pod's findings; `configs` is each node's plugin config, by node name."""
    found = pod_findings_by_uid(
        facts, facts.pod_facts, configs=configs, plugin_uids=plugin_pod_uids(facts.plugin_pods)
    )
    return [item for items in found.values() for item in items]


def pod_findings_by_uid(
    facts: ClusterFacts,
    uids: Iterable[str],
    *,
    configs: Mapping[str, PluginConfig | None],
    plugin_uids: frozenset[str],
) -> dict[str, list[Finding]]:
    """The findings of the pods `uids` names (those the cluster has), by UID; none: absent.

    `configs` is each node's plugin config by node name, `plugin_uids`
    plugin_pod_uids(facts.plugin_pods): worked out once per build by the caller."""
    default = facts.default_config.config
    found: dict[str, list[Finding]] = {}
    for uid in uids:
        pod = facts.pod_facts.get(uid)
        if pod is None or (pod.phase in TERMINAL_PHASES and not pod.failed_admission):
            continue
        config = configs.get(pod.node, default) if pod.node else default
        own = _pod_findings(pod, config, facts.slots_by_uid.get(uid, {}), uid in plugin_uids)
        if own:
            found[uid] = own
    return found


def plugin_pod_uids(plugin_pods: Iterable[Manifest]) -> frozenset[str]:
    return frozenset(str((p.get("metadata") or {}).get("uid", "")) for p in plugin_pods)


def _pod_findings(
    pod: PodFacts, config: PluginConfig | None, slots: Mapping[str, int], plugin: bool
) -> list[Finding]:
    found = []
    if not pod.failed_admission and not plugin and not pod.daemon:
        value = pod.visible_devices
        if value is not None and value.strip().lower() not in _HARMLESS_VISIBLE:
            found.append(_sets_visible(pod.key, pod.node, value))
    if config is None or config.mode not in (Mode.TIME_SLICING, Mode.MPS):
        return found
    count = slots.get(config.resource, 0)
    if count > 1:
        found.append(
            _multi_slot(
                pod.key,
                pod.node,
                count,
                config.mode,
                rejected=config.fail_requests_greater_than_one,
                resource=config.resource,
                phase=pod.phase,
            )
        )
    return found


def _sets_visible(key: str, node: str | None, value: str) -> Finding:
    namespace, _, name = key.partition("/")
    return finding(
        "pod-sets-visible-devices",
        evidence={"pod": key, "NVIDIA_VISIBLE_DEVICES": value},
        remedy=remedy(
            f"kubectl -n {sh(namespace)} get pod {sh(name)} -o yaml", "visible-devices-to-limits"
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
            evidence=evidence,
            remedy=remedy(
                f"kubectl -n {sh(namespace)} delete pod {sh(name)}",
                "request-one-slot",
                resource=resource,
            ),
            node=node,
            pod=key,
        )
    return finding(
        "multi-slot-request-shared",
        evidence=evidence,
        remedy=remedy("", "multi-slot-refuse", resource=resource, pod=key),
        node=node,
        pod=key,
    )
