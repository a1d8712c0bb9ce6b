"""The node's own plugin DaemonSet and ConfigMap: a copy of the shared one pinned to the node.

Everything of the shared DaemonSet is kept but its bookkeeping; the copy gets the node's
GPU UUIDs in NVIDIA_VISIBLE_DEVICES and, for time-slicing, its own config file.
"""

from __future__ import annotations

import copy
import json

from app.domain.changes.models import PREVIOUS_ANNOTATION, PlanRefused, RefusalCode
from app.domain.changes.split_affinity import drop_exclusion
from app.domain.changes.split_models import (
    CONFIG_DIR,
    CONFIG_KEY,
    CONFIG_VOLUME,
    NODE_LABEL,
    OWN_NODE_ANNOTATION,
    OWN_NODE_LABEL,
    SPLIT_ANNOTATION,
    SPLIT_OF_LABEL,
    SplitState,
    node_label_value,
)
from app.domain.cluster import Manifest
from app.domain.plugin.config import CONFIG_HASH_ANNOTATION, config_hash

_DROP_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")
_DROP_ANNOTATIONS = (
    "deprecated.daemonset.template.generation",
    "kubectl.kubernetes.io/last-applied-configuration",
    PREVIOUS_ANNOTATION,  # left by earlier versions on the shared DaemonSet
    "meta.helm.sh/release-name",
    "meta.helm.sh/release-namespace",
)


def own_configmap_for(
    shared: Manifest, name: str, node: str, text: str, existing: Manifest | None
) -> Manifest:
    """The node's own ConfigMap holding its sharing config (labelled like its DaemonSet)."""
    base = copy.deepcopy(existing) if existing is not None else {}
    meta = base.setdefault("metadata", {})
    meta.update({"name": name, "namespace": shared["metadata"].get("namespace")})
    meta.setdefault("labels", {}).update(
        {SPLIT_OF_LABEL: str(shared["metadata"]["name"]), OWN_NODE_LABEL: node_label_value(node)}
    )
    meta.setdefault("annotations", {})[OWN_NODE_ANNOTATION] = node
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
    _own_metadata(ds, shared, state, node, existing)
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
    drop_exclusion(pod)
    tannotations = _own_devices_and_config(pod, tmeta, state, config_text)
    if tannotations:
        tmeta["annotations"] = tannotations
    else:
        tmeta.pop("annotations", None)
    return ds


def _own_metadata(
    ds: Manifest, shared: Manifest, state: SplitState, node: str, existing: Manifest | None
) -> None:
    """The copy's name, labels and split annotation; the shared one's bookkeeping dropped."""
    meta = ds.setdefault("metadata", {})
    for key in (*_DROP_META, "ownerReferences"):
        meta.pop(key, None)
    if existing is not None:
        meta["resourceVersion"] = (existing.get("metadata") or {}).get("resourceVersion")
    meta["name"] = state.daemonset
    labels = dict(meta.get("labels") or {})
    labels.update(
        {SPLIT_OF_LABEL: str(shared["metadata"]["name"]), OWN_NODE_LABEL: node_label_value(node)}
    )
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
    annotations[OWN_NODE_ANNOTATION] = node
    meta["annotations"] = annotations


def _own_devices_and_config(
    pod: Manifest, tmeta: Manifest, state: SplitState, config_text: str | None
) -> dict[str, str]:
    """Set the plugin container's device list and own config; the template's annotations."""
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
    return tannotations


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
    raise PlanRefused(RefusalCode.NO_PLUGIN_CONTAINER, "no-plugin-container")
