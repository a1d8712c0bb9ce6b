"""The split planner: (shared DaemonSet, the node's own one, the node's GPUs, request) -> writes.

Pure. The plugin honours only NVIDIA_VISIBLE_DEVICES for device selection and UUIDs
differ per node, so a node whose GPUs are split gets its own plugin DaemonSet: a copy of
the shared one with everything kept, pinned to the node by a node label, with the node's
UUIDs and its own sharing config. The shared DaemonSet stops scheduling on labelled nodes
(one node-affinity term, added once). No node-specific value ever goes into a DaemonSet
that runs on more than one node.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.changes.edits import time_slicing_text
from app.domain.changes.models import MAX_REPLICAS, MIN_REPLICAS, PlanRefused, RefusalCode
from app.domain.changes.plan import current_settings
from app.domain.changes.split_models import (
    CONFIG_DIR,
    CONFIG_KEY,
    CONFIG_VOLUME,
    NODE_LABEL,
    OWN_NODE_LABEL,
    SPLIT_ANNOTATION,
    SPLIT_OF_LABEL,
    NodeGpu,
    ObjectWrite,
    SplitPlan,
    SplitRequest,
    SplitState,
    own_name,
)
from app.domain.cluster import Manifest
from app.domain.plugin.config import CONFIG_HASH_ANNOTATION, config_hash
from app.domain.plugin.daemonset import ConfigManagerRef, is_operator_managed, read_plugin_spec
from app.domain.snapshot import Mode

EXCLUDE = {"key": NODE_LABEL, "operator": "DoesNotExist"}
_DROP_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")
_DROP_ANNOTATIONS = (
    "deprecated.daemonset.template.generation",
    "kubectl.kubernetes.io/last-applied-configuration",
    "gpu-slots.io/previous-config",
    "meta.helm.sh/release-name",
    "meta.helm.sh/release-namespace",
)


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
    daemonset: Manifest, configmap: Manifest | None, gpus: Sequence[NodeGpu]
) -> SplitState:
    """What `daemonset` gives Kubernetes on a node with these GPUs."""
    meta = daemonset.get("metadata") or {}
    own = SPLIT_OF_LABEL in (meta.get("labels") or {})
    stored = _stored_split(daemonset)
    if own and stored is not None:
        mode, replicas = str(stored.get("mode", "basic")), int(stored.get("replicas", 1))
    else:
        settings = current_settings(daemonset, configmap)
        mode, replicas = settings.mode.value, settings.replicas
        if settings.mode is not Mode.TIME_SLICING:
            replicas = 1
    return SplitState(
        str(meta.get("name", "")), own, visible_uuids(daemonset, gpus), mode, replicas
    )


def governing(node: Manifest, shared: Manifest, own: Sequence[Manifest]) -> Manifest:
    """The DaemonSet whose pod runs on `node`: its own one when labelled for it, else shared."""
    label = ((node.get("metadata") or {}).get("labels") or {}).get(NODE_LABEL)
    for ds in own:
        if label and (ds.get("metadata") or {}).get("name") == label:
            return ds
    return shared


def _stored_split(daemonset: Manifest) -> dict[str, Any] | None:
    raw = ((daemonset.get("metadata") or {}).get("annotations") or {}).get(SPLIT_ANNOTATION)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


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
    shared = _writable(shared)
    if not gpus:
        raise PlanRefused(
            RefusalCode.NO_INVENTORY,
            f"No agent report lists the GPUs of node {request.node}: GPU Slots cannot tell their "
            "UUIDs. Start the agent on that node first.",
        )
    own_label = (own or {}).get("metadata", {}).get("name")
    current = own if own is not None and _labelled(node) == own_label else None
    before = split_state(current if current is not None else shared, shared_configmap, gpus)
    name = own_name(str(shared["metadata"]["name"]), request.node)
    if request.kubernetes_gpus is None:
        if current is None and own is None:
            raise PlanRefused(
                RefusalCode.NOT_SPLIT,
                f"Node {request.node} is already served by the shared DaemonSet.",
            )
        after = split_state(shared, shared_configmap, gpus)
        writes = _return_writes(request.node, node, own, own_configmap)
    else:
        after = _wanted(request, gpus, name)
        if before == after:
            raise PlanRefused(RefusalCode.NO_CHANGE, "The node already runs with this split.")
        writes = _split_writes(request, after, node, shared, own, own_configmap)
    by_uuid = {g.uuid: g for g in gpus}
    gaining = [u for u in after.kubernetes_gpus if u not in before.kubernetes_gpus]
    losing = [u for u in before.kubernetes_gpus if u not in after.kubernetes_gpus]
    host = tuple(p for u in gaining for p in by_uuid[u].host_processes)
    if host and not request.confirm_host_processes:
        pass  # shown as blocking; refused at apply (check_confirmed)
    restarts = [f"the plugin pod on node {request.node}"]
    if any(w.kind == "DaemonSet" and w.name == shared["metadata"]["name"] for w in writes):
        restarts.append(
            f"every pod of the shared DaemonSet {shared['metadata']['name']} ({shared_nodes} "
            "nodes) restarts once: it gets the term that keeps it off split nodes"
        )
    return SplitPlan(
        kind="rollback" if rollback else "split",
        node=request.node,
        before=before,
        after=after,
        writes=tuple(writes),
        slots_before=slots_before,
        host_processes=host,
        pods_on_host_gpus=tuple(p for u in losing for p in by_uuid[u].pods),
        restarts=tuple(restarts),
    )


def check_confirmed(plan: SplitPlan, request: SplitRequest) -> None:
    """Host processes run on GPUs going to Kubernetes: refuse unless the admin confirmed."""
    if plan.host_processes and not request.confirm_host_processes:
        raise PlanRefused(
            RefusalCode.HOST_PROCESSES,
            "Host processes run on GPUs that would go to Kubernetes: "
            + "; ".join(plan.host_processes)
            + ". Pods scheduled there could run out of memory. Confirm with "
            "confirmHostProcesses=true to apply anyway.",
        )


def _writable(shared: Manifest | None) -> Manifest:
    if shared is None:
        raise PlanRefused(RefusalCode.DAEMONSET_NOT_FOUND, "The plugin DaemonSet was not found.")
    if is_operator_managed(shared):
        raise PlanRefused(
            RefusalCode.OPERATOR_MANAGED,
            "The GPU Operator owns the plugin DaemonSet and would revert a per-node copy. "
            "Limit the GPUs per node with the operator's own settings (ClusterPolicy "
            "devicePlugin.env, or the config-manager node label nvidia.com/device-plugin.config "
            "for sharing).",
        )
    ref = read_plugin_spec(shared).config_ref
    if isinstance(ref, ConfigManagerRef):
        raise PlanRefused(
            RefusalCode.CONFIG_PER_NODE,
            f"The plugin runs config-manager: set this node's sharing with the node label "
            f"{ref.node_label} and a key of ConfigMap {ref.configmap}; GPU Slots does not copy "
            "a config-manager DaemonSet per node.",
        )
    return shared


def _labelled(node: Manifest) -> str | None:
    value = ((node.get("metadata") or {}).get("labels") or {}).get(NODE_LABEL)
    return str(value) if value else None


def _wanted(request: SplitRequest, gpus: Sequence[NodeGpu], name: str) -> SplitState:
    known = {g.uuid: g for g in gpus}
    unknown = [u for u in request.kubernetes_gpus or () if u not in known]
    if unknown:
        raise PlanRefused(
            RefusalCode.UNKNOWN_GPU,
            f"Node {request.node} has no GPU {', '.join(unknown)}; its GPUs are "
            f"{', '.join(sorted(known))}.",
        )
    if request.mode == "time-slicing" and not MIN_REPLICAS <= request.replicas <= MAX_REPLICAS:
        raise PlanRefused(
            RefusalCode.OUT_OF_RANGE,
            f"replicas must be {MIN_REPLICAS}..{MAX_REPLICAS} for time-slicing "
            f"(got {request.replicas}).",
        )
    chosen = sorted({known[u] for u in request.kubernetes_gpus or ()}, key=lambda g: g.index)
    replicas = request.replicas if request.mode == "time-slicing" else 1
    return SplitState(name, True, tuple(g.uuid for g in chosen), request.mode, replicas)


def _return_writes(
    node_name: str, node: Manifest, own: Manifest | None, own_configmap: Manifest | None
) -> list[ObjectWrite]:
    writes: list[ObjectWrite] = []
    if _labelled(node):
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
        configmap = _configmap(shared, after.daemonset, request.node, text, own_configmap)
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


def _configmap(
    shared: Manifest, name: str, node: str, text: str, existing: Manifest | None
) -> Manifest:
    base = copy.deepcopy(existing) if existing is not None else {}
    meta = base.setdefault("metadata", {})
    meta.update({"name": name, "namespace": shared["metadata"].get("namespace")})
    meta.setdefault("labels", {}).update(
        {SPLIT_OF_LABEL: str(shared["metadata"]["name"]), OWN_NODE_LABEL: node}
    )
    base.update({"apiVersion": "v1", "kind": "ConfigMap", "data": {CONFIG_KEY: text}})
    return base


def own_daemonset(
    shared: Manifest,
    state: SplitState,
    node: str,
    config_text: str | None,
    existing: Manifest | None = None,
) -> Manifest:
    """A copy of the shared DaemonSet for one node: pinned, its UUIDs, its own config."""
    ds = copy.deepcopy(shared)
    ds.pop("status", None)
    meta = ds.setdefault("metadata", {})
    for key in (*_DROP_META, "ownerReferences"):
        meta.pop(key, None)
    if existing is not None:
        meta["resourceVersion"] = (existing.get("metadata") or {}).get("resourceVersion")
    meta["name"] = state.daemonset
    labels = dict(meta.get("labels") or {})
    labels.update({SPLIT_OF_LABEL: str(shared["metadata"]["name"]), OWN_NODE_LABEL: node})
    meta["labels"] = labels
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k not in _DROP_ANNOTATIONS
    }
    annotations[SPLIT_ANNOTATION] = json.dumps(
        {
            "node": node,
            "kubernetes_gpus": list(state.kubernetes_gpus),
            "mode": state.mode,
            "replicas": state.replicas,
        },
        sort_keys=True,
    )
    meta["annotations"] = annotations
    spec = ds.setdefault("spec", {})
    shared_selector = (spec.get("selector") or {}).get("matchLabels") or {}
    spec["selector"] = {"matchLabels": {NODE_LABEL: state.daemonset}}
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    tlabels = {k: v for k, v in (tmeta.get("labels") or {}).items() if k not in shared_selector}
    tlabels[NODE_LABEL] = state.daemonset
    tmeta["labels"] = tlabels
    pod = template.setdefault("spec", {})
    pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), NODE_LABEL: state.daemonset}
    _drop_exclusion(pod)
    container = _plugin_container(pod)
    env = [
        e
        for e in container.get("env") or []
        if e.get("name") not in ("NVIDIA_VISIBLE_DEVICES", "CONFIG_FILE")
    ]
    env.append(
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": ",".join(state.kubernetes_gpus) or "none"}
    )
    volumes = [v for v in pod.get("volumes") or [] if v.get("name") != CONFIG_VOLUME]
    mounts = [m for m in container.get("volumeMounts") or [] if m.get("name") != CONFIG_VOLUME]
    tannotations = dict(tmeta.get("annotations") or {})
    tannotations.pop(CONFIG_HASH_ANNOTATION, None)
    if config_text is not None:
        env.append({"name": "CONFIG_FILE", "value": f"{CONFIG_DIR}/{CONFIG_KEY}"})
        volumes.append({"name": CONFIG_VOLUME, "configMap": {"name": state.daemonset}})
        mounts.append({"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True})
        tannotations[CONFIG_HASH_ANNOTATION] = config_hash(config_text)
    container["env"] = env
    container["volumeMounts"] = mounts
    pod["volumes"] = volumes
    if tannotations:
        tmeta["annotations"] = tannotations
    else:
        tmeta.pop("annotations", None)
    return ds


def _plugin_container(pod: Manifest) -> Manifest:
    name = None
    containers: list[Manifest] = pod.get("containers") or []
    for container in containers:
        if "k8s-device-plugin" in str(container.get("image", "")) and "config-manager" not in (
            container.get("command") or []
        ):
            name = container.get("name")
            break
    for container in containers:
        if name is None or container.get("name") == name:
            return container
    raise PlanRefused(RefusalCode.NO_PLUGIN_CONTAINER, "The DaemonSet has no plugin container.")


def exclude_split_nodes(shared: Manifest) -> Manifest | None:
    """The shared DaemonSet with the term that keeps it off split nodes (None: has it already)."""
    pod = (((shared.get("spec") or {}).get("template") or {}).get("spec")) or {}
    required = _required(pod)
    terms = (required or {}).get("nodeSelectorTerms") or []
    if terms and all(EXCLUDE in (t.get("matchExpressions") or []) for t in terms):
        return None
    new = copy.deepcopy(shared)
    new.pop("status", None)
    new_pod = new["spec"]["template"]["spec"]
    affinity = new_pod.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    req = affinity.setdefault(
        "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []}
    )
    new_terms = req.setdefault("nodeSelectorTerms", [])
    if not new_terms:
        new_terms.append({"matchExpressions": []})
    for term in new_terms:
        expressions = term.setdefault("matchExpressions", [])
        if EXCLUDE not in expressions:
            expressions.append(dict(EXCLUDE))
    return new


def _required(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    affinity = (pod.get("affinity") or {}).get("nodeAffinity") or {}
    value = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    return value if isinstance(value, Mapping) else None


def _drop_exclusion(pod: Manifest) -> None:
    """An own DaemonSet copies the shared one: remove the term that would keep it off its node."""
    required = _required(pod)
    if required is None:
        return
    for term in required.get("nodeSelectorTerms") or []:
        expressions = [e for e in term.get("matchExpressions") or [] if e != EXCLUDE]
        if expressions:
            term["matchExpressions"] = expressions
        else:
            term.pop("matchExpressions", None)
    terms = [t for t in required.get("nodeSelectorTerms") or [] if t]
    if not terms:
        node_affinity = pod["affinity"]["nodeAffinity"]
        node_affinity.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
        if not node_affinity:
            pod["affinity"].pop("nodeAffinity")
        if not pod["affinity"]:
            pod.pop("affinity")
