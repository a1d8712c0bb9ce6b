"""A change's parts as the API answers them: the plugin's settings, slots per node, a node's
split and its GPUs (the mode and split previews and results are built from these)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.domain.changes.preview import NodeSlots
from app.domain.changes.split_models import SplitState
from app.domain.snapshot import GpuState, NodeState
from app.i18n.coded import worded_values
from app.web.views.admin_schemas import NodeSlotsOut, PluginSettingsOut
from app.web.views.split_schemas import SplitGpuOut, SplitStateOut


def settings_out(data: Mapping[str, Any]) -> PluginSettingsOut:
    """The settings for JSON: an unusable config's reason worded (the plugin's English)."""
    return PluginSettingsOut.model_validate(worded_values(data))


def node_slots_out(n: NodeSlots) -> NodeSlotsOut:
    return NodeSlotsOut.model_validate(n, from_attributes=True)


def state_out(state: SplitState) -> SplitStateOut:
    """A node's split as the split API spells it (snake_case, as it always has)."""
    return SplitStateOut(
        daemonset=state.daemonset,
        own=state.own,
        kubernetes_gpus=list(state.kubernetes_gpus),
        mode=state.mode,
        replicas=state.replicas,
        config_key=state.config_key if state.per_node_config else None,
    )


_GPU_FIELDS = {"uuid", "index", "name", "memory_total_mib", "processes"}


def gpus_out(state: NodeState, role: Callable[[GpuState], tuple[bool, int]]) -> list[SplitGpuOut]:
    """The node's GPUs as the agent reports them, by index; `role`: (given to Kubernetes, slots)."""
    shown = []
    for g in sorted(state.gpus, key=lambda g: g.index):
        kubernetes, slots = role(g)
        found = g.model_dump(include=_GPU_FIELDS)
        shown.append(
            SplitGpuOut.model_validate(
                {**found, "role": "kubernetes" if kubernetes else "host", "slots": slots}
            )
        )
    return shown
