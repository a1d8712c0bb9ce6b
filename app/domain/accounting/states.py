"""The snapshot's output models built from the engine's facts: node, GPU, MIG, plugin, totals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.domain.accounting.facts import NodeFacts
from app.domain.accounting.ledger.models import GpuFacts, MigFacts
from app.domain.accounting.schedulable import node_taints
from app.domain.cluster import AccountingOptions
from app.domain.plugin.config import DEFAULT_ALLOCATION_POLICY
from app.domain.plugin.daemonset import NODE_CONFIG_LABEL, ConfigManagerRef, PluginSpec
from app.domain.plugin.effective import EffectiveConfig
from app.domain.snapshot import (
    SEVERITY_RANK,
    Finding,
    GpuState,
    MigDeviceState,
    Mode,
    NodeConfig,
    NodeState,
    PluginState,
)

# The fields a state takes as they are from the engine's facts (the rest it works out).
_NODE_FIELDS = (
    "name",
    "labels",
    "ready",
    "gpu_node",
    "k3s",
    "mode",
    "resource",
    "replicas",
    "physical_gpus",
    "visible_gpus",
    "host_gpus",
    "failing_gpus",
    "expected_slots",
    "capacity",
    "allocatable",
    "requested",
    "free",
    "agent",
    "pods",
    "schedulable",
    "unschedulable_reason",
    "resources",
    "stranded",
)
# A GPU's and a MIG device's: from the ledger's row, and from the agent's reading of it.
_ROW_FIELDS = ("uuid", "slots", "holders", "processes")
_READING_FIELDS = ("memory_total_mib", "memory_used_mib")
_GPU_ROW_FIELDS = (*_ROW_FIELDS, "role", "memory_pods_mib", "memory_host_mib")
_GPU_READING_FIELDS = (*_READING_FIELDS, "index", "name", "utilization_pct", "mig_mode", "health")
_MIG_ROW_FIELDS = (*_ROW_FIELDS, "resource")
_MIG_READING_FIELDS = (*_READING_FIELDS, "profile")


def build_node_state(facts: NodeFacts, findings: list[Finding]) -> NodeState:
    per_gpu: dict[str, list[Finding]] = {}
    for item in findings:
        if item.gpu_uuid is not None:
            per_gpu.setdefault(item.gpu_uuid, []).append(item)
    gpus = []
    for gpu in facts.gpus:
        own = per_gpu.get(gpu.uuid, [])
        gpus.append(
            GpuState(
                **_ledger_row(gpu, _GPU_ROW_FIELDS, _GPU_READING_FIELDS),
                finding_codes=sorted({f.code for f in own}),
                worst_severity=min(
                    (f.severity for f in own), key=SEVERITY_RANK.__getitem__, default=None
                ),
                mig_devices=[
                    MigDeviceState(**_ledger_row(d, _MIG_ROW_FIELDS, _MIG_READING_FIELDS))
                    for d in gpu.mig_devices
                ],
            )
        )
    return NodeState(
        **_copied(facts, _NODE_FIELDS),
        plugin_pod=facts.plugin_pod_state,
        gpus=gpus,
        findings=findings,
        cordoned=bool((facts.manifest.get("spec") or {}).get("unschedulable")),
        taints=node_taints(facts.manifest),
        config=_node_config(facts),
    )


def _ledger_row(
    row: GpuFacts | MigFacts, row_fields: Iterable[str], reading_fields: Iterable[str]
) -> dict[str, Any]:
    """A GPU's or a MIG device's state fields: its row's, its reading's, the slots held."""
    return {
        **_copied(row, row_fields),
        **_copied(row.reading, reading_fields),
        "held_slots": sum(h.slots for h in row.holders),
    }


def _copied(source: object, names: Iterable[str]) -> dict[str, Any]:
    """The attributes `names` of `source`, by name."""
    return {name: getattr(source, name) for name in names}


def _node_config(facts: NodeFacts) -> NodeConfig | None:
    spec = facts.spec
    if spec is None:
        return None
    config = facts.config
    label_key = (
        spec.config_ref.node_label
        if isinstance(spec.config_ref, ConfigManagerRef)
        else NODE_CONFIG_LABEL
    )
    return NodeConfig(
        daemonset=spec.ref,
        managed_by=spec.managed_by,  # type: ignore[arg-type]
        source=config.source,
        configmap=config.configmap,
        key=config.key,
        label=facts.labels.get(label_key),
        mig_strategy=config.config.mig_strategy if config.config else None,
        allocation_policy=config.config.allocation_policy if config.config else None,
        fail_requests_greater_than_one=bool(
            config.config and config.config.fail_requests_greater_than_one
        ),
        change_with=_change_with(spec, label_key, facts.name),
    )


def _change_with(spec: PluginSpec, label_key: str, node: str) -> str | None:
    """The owner's own way to change the config; None where GPU Slots' admin page applies."""
    per_node = ""
    if isinstance(spec.config_ref, ConfigManagerRef):  # only config-manager reads the label
        per_node = f"; per node: kubectl label node {node} {label_key}=<config key> --overwrite"
    if spec.managed_by == "gpu-operator":
        return (
            "kubectl edit clusterpolicy cluster-policy  # spec.devicePlugin.config "
            f"(name, default){per_node}"
        )
    if spec.managed_by == "helm":
        return (
            f"helm upgrade <release> -n {spec.namespace} --reuse-values -f values.yaml  "
            f"# config.map / config.default{per_node}"
        )
    return None


def plugin_state(
    spec: PluginSpec | None, default: EffectiveConfig, options: AccountingOptions
) -> PluginState:
    config = default.config
    source = default.source
    node_label = None
    if spec is not None and isinstance(spec.config_ref, ConfigManagerRef):
        source = f"configmap/{spec.config_ref.configmap}"
        node_label = spec.config_ref.node_label
    return PluginState(
        name=spec.name if spec else options.plugin.name,
        namespace=spec.namespace if spec else options.plugin.namespace,
        found=spec is not None,
        image=spec.image if spec else None,
        version=spec.version_text if spec else None,
        ready=spec.ready if spec else 0,
        desired=spec.desired if spec else 0,
        config_source=source,
        config_node_label=node_label,
        operator_managed=spec.operator_managed if spec else False,
        mode=config.mode if config and spec else Mode.UNKNOWN,
        replicas=config.replicas if config else 1,
        resource=config.resource if config else options.serving_resource,
        rename_by_default=config.rename_by_default if config else False,
        fail_requests_greater_than_one=config.fail_requests_greater_than_one if config else False,
        allocation_policy=config.allocation_policy if config else DEFAULT_ALLOCATION_POLICY,
    )
