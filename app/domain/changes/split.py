"""The split planner: (shared DaemonSet, the node's own one, the node's GPUs, request) -> writes.

Pure. The plugin honours only NVIDIA_VISIBLE_DEVICES for device selection and UUIDs
differ per node, so a node whose GPUs are split gets its own plugin DaemonSet: a copy of
the shared one with everything kept, pinned to the node by a node label, with the node's
UUIDs and its own sharing config. The shared DaemonSet stops scheduling on labelled nodes
(one node-affinity term, added once). No node-specific value ever goes into a DaemonSet
that runs on more than one node.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.changes.edits import time_slicing_text
from app.domain.changes.models import MAX_REPLICAS, PlanRefused, RefusalCode, json_annotation
from app.domain.changes.plan import current_settings
from app.domain.changes.split_affinity import exclude_split_nodes
from app.domain.changes.split_checks import require_inventory, require_known_gpus, wanted_replicas
from app.domain.changes.split_config import node_config_state, plan_config_label
from app.domain.changes.split_daemonset import own_configmap_for, own_daemonset
from app.domain.changes.split_models import (
    CONFIG_KEY,
    NODE_LABEL,
    SPLIT_ANNOTATION,
    SPLIT_OF_LABEL,
    NodeGpu,
    ObjectWrite,
    Restart,
    SplitMove,
    SplitPlan,
    SplitRequest,
    SplitState,
    own_name,
)
from app.domain.cluster import Manifest
from app.domain.plugin.daemonset import ConfigManagerRef, is_operator_managed, read_plugin_spec
from app.domain.snapshot import Mode


def visible_uuids(daemonset: Manifest, gpus: Sequence[NodeGpu]) -> tuple[str, ...]:
    """The node's GPUs this DaemonSet's plugin sees (the container runtime's reading)."""
    spec = read_plugin_spec(daemonset)
    ordered = sorted(gpus, key=lambda g: g.index)
    value = spec.env.get("NVIDIA_VISIBLE_DEVICES")
    if spec.privileged or value is None or value.strip() in ("", "all"):
        return tuple(g.uuid for g in ordered)
    wanted = [part.strip() for part in value.split(",") if part.strip()]
    if any(w in ("none", "void") for w in wanted):
        return ()
    return tuple(g.uuid for g in ordered if g.uuid in wanted or str(g.index) in wanted)


def split_state(
    daemonset: Manifest,
    configmap: Manifest | None,
    gpus: Sequence[NodeGpu],
    node: Manifest | None = None,
) -> SplitState:
    """What `daemonset` gives Kubernetes on a node with these GPUs (and these labels)."""
    if node is not None and config_manager_install(daemonset):
        return node_config_state(daemonset, configmap, node, visible_uuids(daemonset, gpus))
    meta = daemonset.get("metadata") or {}
    own = SPLIT_OF_LABEL in (meta.get("labels") or {})
    stored = stored_split(json_annotation(daemonset, SPLIT_ANNOTATION)) if own else None
    if stored is not None:
        mode, replicas = stored
    else:
        settings = current_settings(daemonset, configmap)
        mode, replicas = settings.mode.value, settings.replicas
        if settings.mode is not Mode.TIME_SLICING:
            replicas = 1
    return SplitState(
        str(meta.get("name", "")), own, visible_uuids(daemonset, gpus), mode, replicas
    )


def stored_split(stored: Manifest | None) -> tuple[str, int] | None:
    """The mode and replicas our split annotation names, or None when it is absent or holds
    what we never write (anyone who may edit the DaemonSet may edit it): the DaemonSet's own
    config is read instead."""
    if stored is None:
        return None
    mode, replicas = stored.get("mode", Mode.BASIC.value), stored.get("replicas", 1)
    if mode not in (Mode.BASIC.value, Mode.TIME_SLICING.value):
        return None
    if type(replicas) is not int or not 1 <= replicas <= MAX_REPLICAS:
        return None
    return mode, replicas


def governing(node: Manifest, shared: Manifest, own: Sequence[Manifest]) -> Manifest:
    """The DaemonSet whose pod runs on `node`: its own one when labelled for it, else shared."""
    label = ((node.get("metadata") or {}).get("labels") or {}).get(NODE_LABEL)
    for ds in own:
        if label and (ds.get("metadata") or {}).get("name") == label:
            return ds
    return shared


def plan_split(
    request: SplitRequest,
    *,
    node: Manifest,
    shared: Manifest | None,
    shared_configmap: Manifest | None,
    own: Manifest | None,
    own_configmap: Manifest | None,
    gpus: Sequence[NodeGpu],
    slots_before: int | None,
    shared_nodes: int,
    rollback: bool = False,
) -> SplitPlan:
    """The writes for `request`; PlanRefused says why it cannot (or need not) be made."""
    if config_manager_install(shared):
        assert shared is not None
        move = plan_config_label(
            request,
            node=node,
            shared=shared,
            configmap=shared_configmap,
            visible=visible_uuids(shared, gpus),
            gpus=gpus,
        )
    else:
        move = _own_daemonset_move(
            request,
            node,
            _writable(shared),
            shared_configmap,
            own=own,
            own_configmap=own_configmap,
            gpus=gpus,
            shared_nodes=shared_nodes,
        )
    by_uuid = {g.uuid: g for g in gpus}
    gaining = [u for u in move.after.kubernetes_gpus if u not in move.before.kubernetes_gpus]
    losing = [u for u in move.before.kubernetes_gpus if u not in move.after.kubernetes_gpus]
    # host processes on gaining GPUs are shown as blocking; refused at apply (check_confirmed)
    return SplitPlan(
        kind="rollback" if rollback else "split",
        node=request.node,
        before=move.before,
        after=move.after,
        writes=move.writes,
        slots_before=slots_before,
        host_processes=tuple(p for u in gaining for p in by_uuid[u].host_processes),
        pods_on_host_gpus=tuple(p for u in losing for p in by_uuid[u].pods),
        restarts=move.restarts,
        warnings=move.warnings,
    )


def _own_daemonset_move(
    request: SplitRequest,
    node: Manifest,
    shared: Manifest,
    shared_configmap: Manifest | None,
    *,
    own: Manifest | None,
    own_configmap: Manifest | None,
    gpus: Sequence[NodeGpu],
    shared_nodes: int,
) -> SplitMove:
    """The node's own DaemonSet made or changed, or deleted to give the node back."""
    require_inventory(request, gpus)
    own_label = (own or {}).get("metadata", {}).get("name")
    current = own if own is not None and _labelled(node) == own_label else None
    before = split_state(current if current is not None else shared, shared_configmap, gpus)
    if request.kubernetes_gpus is None:
        if current is None and own is None and not _keyed(node):
            raise PlanRefused(RefusalCode.NOT_SPLIT, "not-split", node=request.node)
        after = split_state(shared, shared_configmap, gpus)
        writes = _return_writes(request.node, node, own, own_configmap)
    else:
        after = _wanted(request, gpus, own_name(str(shared["metadata"]["name"]), request.node))
        if before == after:
            raise PlanRefused(RefusalCode.NO_CHANGE, "no-change-split")
        writes = _split_writes(request, after, node, shared, own, own_configmap)
    restarts = _restarts(request, shared, writes, shared_nodes=shared_nodes)
    return SplitMove(before, after, tuple(writes), restarts)


def _restarts(
    request: SplitRequest, shared: Manifest, writes: Sequence[ObjectWrite], *, shared_nodes: int
) -> tuple[Restart, ...]:
    """The plugin pods the plan restarts: the node's, and every shared one when it is written."""
    restarts = [Restart("node-pod", {"node": request.node})]
    if any(w.kind == "DaemonSet" and w.name == shared["metadata"]["name"] for w in writes):
        name = shared["metadata"]["name"]
        restarts.append(Restart("shared-pods", {"daemonset": name, "nodes": shared_nodes}))
    return tuple(restarts)


def check_confirmed(plan: SplitPlan, request: SplitRequest) -> None:
    """Host processes run on GPUs going to Kubernetes: refuse unless the admin confirmed."""
    if plan.host_processes and not request.confirm_host_processes:
        raise PlanRefused(
            RefusalCode.HOST_PROCESSES,
            "host-processes",
            details=plan.host_processes,
            processes="; ".join(plan.host_processes),
        )


def config_manager_install(shared: Manifest | None) -> bool:
    """The shared DaemonSet runs config-manager and GPU Slots may write it (no operator)."""
    if shared is None or is_operator_managed(shared):
        return False
    return isinstance(read_plugin_spec(shared).config_ref, ConfigManagerRef)


def _writable(shared: Manifest | None) -> Manifest:
    if shared is None:
        raise PlanRefused(RefusalCode.DAEMONSET_NOT_FOUND, "plugin-not-found")
    if is_operator_managed(shared):
        raise PlanRefused(RefusalCode.OPERATOR_MANAGED, "operator-managed-split")
    return shared


def _labelled(node: Manifest) -> str | None:
    value = ((node.get("metadata") or {}).get("labels") or {}).get(NODE_LABEL)
    return str(value) if value else None


def _keyed(node: Manifest) -> bool:
    """The node carries the label, even empty: a hand-over cut short leaves it vacant, which
    keeps the shared DaemonSet off the node as a name does (app.kube.handover)."""
    return NODE_LABEL in ((node.get("metadata") or {}).get("labels") or {})


def _wanted(request: SplitRequest, gpus: Sequence[NodeGpu], name: str) -> SplitState:
    require_known_gpus(request, gpus)
    replicas = wanted_replicas(request)
    known = {g.uuid: g for g in gpus}
    chosen = sorted({known[u] for u in request.kubernetes_gpus or ()}, key=lambda g: g.index)
    return SplitState(name, True, tuple(g.uuid for g in chosen), request.mode, replicas)


def _return_writes(
    node_name: str, node: Manifest, own: Manifest | None, own_configmap: Manifest | None
) -> list[ObjectWrite]:
    writes: list[ObjectWrite] = []
    if _keyed(node):
        writes.append(ObjectWrite("label", "Node", node_name, node, {"labels": {NODE_LABEL: None}}))
    if own is not None:
        writes.append(ObjectWrite("delete", "DaemonSet", own["metadata"]["name"], own, None))
    if own_configmap is not None:
        name = own_configmap["metadata"]["name"]
        writes.append(ObjectWrite("delete", "ConfigMap", name, own_configmap, None))
    return writes


def _split_writes(
    request: SplitRequest,
    after: SplitState,
    node: Manifest,
    shared: Manifest,
    own: Manifest | None,
    own_configmap: Manifest | None,
) -> list[ObjectWrite]:
    writes: list[ObjectWrite] = []
    text = None
    if after.mode == "time-slicing":
        old = ((own_configmap or {}).get("data") or {}).get(CONFIG_KEY)
        text = time_slicing_text(
            old,
            replicas=after.replicas,
            rename_by_default=False,
            fail_requests_greater_than_one=False,
            warnings=[],
        )
        configmap = own_configmap_for(shared, after.daemonset, request.node, text, own_configmap)
        if own_configmap is None:
            writes.append(ObjectWrite("create", "ConfigMap", after.daemonset, None, configmap))
        elif configmap != own_configmap:
            writes.append(
                ObjectWrite("replace", "ConfigMap", after.daemonset, own_configmap, configmap)
            )
    new_own = own_daemonset(shared, after, request.node, text, own)
    if own is None:
        writes.append(ObjectWrite("create", "DaemonSet", after.daemonset, None, new_own))
    else:
        writes.append(ObjectWrite("replace", "DaemonSet", after.daemonset, own, new_own))
    excluded = exclude_split_nodes(shared)
    if excluded is not None:
        writes.append(
            ObjectWrite("replace", "DaemonSet", shared["metadata"]["name"], shared, excluded)
        )
    if _labelled(node) != after.daemonset:
        writes.append(
            ObjectWrite(
                "label", "Node", request.node, node, {"labels": {NODE_LABEL: after.daemonset}}
            )
        )
    if text is None and own_configmap is not None:
        name = own_configmap["metadata"]["name"]
        writes.append(ObjectWrite("delete", "ConfigMap", name, own_configmap, None))
    return writes
