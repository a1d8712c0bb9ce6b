"""Per-node sharing where the plugin runs NVIDIA's config-manager: a node label, not a copy.

Pure. config-manager (init container and sidecar of the Helm chart) links the plugin's
config to the key of its ConfigMap named by the node label `nvidia.com/device-plugin.config`
and, when the label changes, rewrites the link and signals the plugin, which restarts with
it (the pod stays). So a node's mode changes with two writes at most: a key added to the
ConfigMap when no key holds the wanted config yet (`gpu-slots-ts-4`, `gpu-slots-basic`),
then the node label. Other keys and other nodes are untouched. config-manager selects no
devices: a different set of GPUs is refused here, as before.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

from app.domain.changes.edits import time_slicing_text
from app.domain.changes.models import ChangeWarning, PlanRefused, RefusalCode
from app.domain.changes.split_checks import require_inventory, require_known_gpus, wanted_replicas
from app.domain.changes.split_models import (
    NodeGpu,
    ObjectWrite,
    Restart,
    SplitMove,
    SplitRequest,
    SplitState,
)
from app.domain.cluster import Manifest
from app.domain.plugin.config import PluginConfig, PluginConfigError, parse_plugin_config
from app.domain.plugin.daemonset import ConfigManagerRef, read_plugin_spec
from app.domain.plugin.effective import resolve_config
from app.domain.snapshot import Mode

BASIC_TEXT = "version: v1\n"


def config_key_name(mode: str, replicas: int) -> str:
    """The key GPU Slots adds for a mode: gpu-slots-basic, gpu-slots-ts-<replicas>."""
    return "gpu-slots-basic" if mode != "time-slicing" else f"gpu-slots-ts-{replicas}"


def node_config_state(
    shared: Manifest,
    configmap: Manifest | None,
    node: Manifest,
    visible: Sequence[str],
) -> SplitState:
    """The mode the node's config-manager picks now (label, DEFAULT_CONFIG, fallbacks)."""
    spec = read_plugin_spec(shared)
    labels = _labels(node)
    ref = spec.config_ref
    label = labels.get(ref.node_label) if isinstance(ref, ConfigManagerRef) else None
    effective = resolve_config(spec, _by_name(configmap), node_labels=labels)
    config = effective.config
    mode = "unknown" if config is None else config.mode.value
    replicas = config.replicas if config is not None and config.mode is Mode.TIME_SLICING else 1
    name = str((shared.get("metadata") or {}).get("name", ""))
    return SplitState(name, False, tuple(visible), mode, replicas, label or None, True)


def plan_config_label(
    request: SplitRequest,
    *,
    node: Manifest,
    shared: Manifest,
    configmap: Manifest | None,
    visible: Sequence[str],
    gpus: Sequence[NodeGpu],
) -> SplitMove:
    """The writes that give the node the requested mode through its config label."""
    ref = read_plugin_spec(shared).config_ref
    assert isinstance(ref, ConfigManagerRef)
    require_inventory(request, gpus)
    before = node_config_state(shared, configmap, node, visible)
    _refuse_other_gpus(request, ref, gpus, visible)
    if configmap is None:
        raise PlanRefused(
            RefusalCode.CONFIG_KEY_MISMATCH, "configs-not-found", configmap=ref.configmap
        )
    if request.restore_config_key:
        after = _restored(request, ref, node, shared=shared, configmap=configmap, visible=visible)
        writes: list[ObjectWrite] = []
    else:
        after, writes = _wanted(request, ref, before, shared=shared, configmap=configmap)
    if after.config_key == before.config_key:
        raise PlanRefused(RefusalCode.NO_CHANGE, "no-change-label")
    writes.append(
        ObjectWrite(
            "label", "Node", request.node, node, {"labels": {ref.node_label: after.config_key}}
        )
    )
    return SplitMove(
        before,
        after,
        tuple(writes),
        restarts=(
            Restart(
                "config-manager" if after.config_key else "config-manager-fallback",
                {
                    "node": request.node,
                    **({"config": after.config_key} if after.config_key else {}),
                },
            ),
        ),
        warnings=_warnings(before, after, {g.uuid: g for g in gpus}),
    )


def _refuse_other_gpus(
    request: SplitRequest, ref: ConfigManagerRef, gpus: Sequence[NodeGpu], visible: Sequence[str]
) -> None:
    """config-manager selects no GPUs: only the node's sharing may change, not its GPUs."""
    if request.kubernetes_gpus is None:
        raise PlanRefused(
            RefusalCode.NOT_SPLIT, "not-split-label", node=request.node, label=ref.node_label
        )
    require_known_gpus(request, gpus)
    if set(request.kubernetes_gpus) != set(visible):
        raise PlanRefused(
            RefusalCode.CONFIG_PER_NODE,
            "config-manager-gpus",
            node=request.node,
            label=ref.node_label,
            configmap=ref.configmap,
            visible=", ".join(visible) or "-",
        )


def _restored(
    request: SplitRequest,
    ref: ConfigManagerRef,
    node: Manifest,
    *,
    shared: Manifest,
    configmap: Manifest,
    visible: Sequence[str],
) -> SplitState:
    """A rollback: the state with the node label set back to the recorded key (or removed)."""
    key = request.config_key
    if key is not None and key not in _data(configmap):
        raise PlanRefused(
            RefusalCode.NOT_REVERSIBLE, "config-key-gone", configmap=ref.configmap, key=key
        )
    labels = {**_labels(node), ref.node_label: key} if key else _without(node, ref.node_label)
    return node_config_state(shared, configmap, {"metadata": {"labels": labels}}, visible)


def _wanted(
    request: SplitRequest,
    ref: ConfigManagerRef,
    before: SplitState,
    *,
    shared: Manifest,
    configmap: Manifest,
) -> tuple[SplitState, list[ObjectWrite]]:
    """The requested mode's state, and the ConfigMap write adding its key where none has it."""
    replicas = wanted_replicas(request)
    if (before.mode, before.replicas) == (request.mode, replicas):
        raise PlanRefused(RefusalCode.NO_CHANGE, "no-change-sharing")
    data = _data(configmap)
    text = _text(request.mode, replicas)
    key = _same_key(data, text, read_plugin_spec(shared).env)
    writes = []
    if key is None:
        key = _free_key(data, config_key_name(request.mode, replicas))
        new = copy.deepcopy(configmap)
        new.pop("status", None)
        new["data"] = {**data, key: text}
        writes.append(ObjectWrite("replace", "ConfigMap", ref.configmap, configmap, new))
    after = SplitState(
        before.daemonset, False, before.kubernetes_gpus, request.mode, replicas, key, True
    )
    return after, writes


def _warnings(
    before: SplitState, after: SplitState, by_uuid: Mapping[str, NodeGpu]
) -> tuple[ChangeWarning, ...]:
    if after.slots >= before.slots:
        return ()
    pods = sorted({p for u in before.kubernetes_gpus for p in by_uuid[u].pods})
    if not pods:
        return ()
    return (
        ChangeWarning(
            "slots-shrink-under-pods",
            {"before": before.slots, "after": after.slots, "pods": ", ".join(pods)},
        ),
    )


def _text(mode: str, replicas: int) -> str:
    if mode != "time-slicing":
        return BASIC_TEXT
    return time_slicing_text(
        None,
        replicas=replicas,
        rename_by_default=False,
        fail_requests_greater_than_one=False,
        warnings=[],
    )


def _fingerprint(config: PluginConfig) -> tuple[object, ...]:
    return (
        config.mode,
        config.replicas,
        config.resource,
        config.rename_by_default,
        config.fail_requests_greater_than_one,
        config.mig_strategy,
    )


def _same_key(data: Mapping[str, str], text: str, env: Mapping[str, str]) -> str | None:
    """An existing key whose config is the one wanted (`default` first, then by name)."""
    wanted = _fingerprint(parse_plugin_config(text, env=env))
    for key in sorted(data, key=lambda k: (k != "default", k)):
        try:
            if _fingerprint(parse_plugin_config(data[key], env=env)) == wanted:
                return key
        except PluginConfigError:
            continue
    return None


def _free_key(data: Mapping[str, str], name: str) -> str:
    if name not in data:
        return name
    n = 2
    while f"{name}-{n}" in data:
        n += 1
    return f"{name}-{n}"


def _labels(node: Manifest) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((node.get("metadata") or {}).get("labels") or {}).items()}


def _without(node: Manifest, label: str) -> dict[str, str]:
    return {k: v for k, v in _labels(node).items() if k != label}


def _data(configmap: Manifest | None) -> dict[str, str]:
    raw = (configmap or {}).get("data") or {}
    return {str(k): str(v) for k, v in raw.items() if not str(k).startswith("..")}


def _by_name(configmap: Manifest | None) -> dict[str, Manifest]:
    if configmap is None:
        return {}
    return {str((configmap.get("metadata") or {}).get("name", "")): configmap}
