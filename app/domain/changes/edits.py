"""The planner's edits: the plugin's config wiring in a DaemonSet, and config.yaml text.

The wiring is what connects the plugin container to the ConfigMap: the CONFIG_FILE env
entry, the mounts and volumes of that ConfigMap, and the config-hash pod-template
annotation. It is all rollback needs to restore of the DaemonSet.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.domain.changes.models import ChangeWarning
from app.domain.cluster import Manifest
from app.domain.plugin.config import CONFIG_HASH_ANNOTATION, GPU_RESOURCE
from app.domain.plugin.replicated import Replicated, SharingResource
from app.domain.plugin.write import dump_yaml as dump_yaml  # one YAML writer; re-exported
from app.domain.plugin.write import write_config

VOLUME_NAME = "nvidia-device-plugin-config"
MOUNT_DIR = "/etc/nvidia-device-plugin"


@dataclass(frozen=True)
class Wiring:
    """The DaemonSet parts that connect the plugin to its config (what rollback restores)."""

    config_file: list[Manifest]  # env entries named CONFIG_FILE of the plugin container
    mounts: list[Manifest]  # plugin-container mounts of the ConfigMap's volumes
    volumes: list[Manifest]  # pod volumes backed by the ConfigMap
    config_hash: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "configFile": self.config_file,
            "volumeMounts": self.mounts,
            "volumes": self.volumes,
            "configHash": self.config_hash,
        }


def wire_new(
    pod_spec: Manifest, container: Manifest, wiring: Wiring, configmap_name: str, key: str
) -> Wiring:
    """CONFIG_FILE unset: point it at an existing plain mount of the ConfigMap, or add one."""
    for mount in wiring.mounts:
        volume = _volume(pod_spec, mount.get("name"))
        if not mount.get("subPath") and not (volume.get("configMap") or {}).get("items"):
            path = f"{str(mount['mountPath']).rstrip('/')}/{key}"
            return Wiring(
                [{"name": "CONFIG_FILE", "value": path}], wiring.mounts, wiring.volumes, None
            )
    volumes = list(wiring.volumes)
    usable = [v for v in volumes if not (v.get("configMap") or {}).get("items")]
    if usable:
        volume_name = usable[0]["name"]
    else:
        taken = {str(v.get("name")) for v in pod_spec.get("volumes") or []}
        volume_name, n = VOLUME_NAME, 2
        while volume_name in taken:
            volume_name, n = f"{VOLUME_NAME}-{n}", n + 1
        volumes.append({"name": volume_name, "configMap": {"name": configmap_name}})
    taken_paths = {str(m.get("mountPath")).rstrip("/") for m in container.get("volumeMounts") or []}
    mount_dir = MOUNT_DIR if MOUNT_DIR not in taken_paths else f"{MOUNT_DIR}-gpu-slots"
    mounts = [*wiring.mounts, {"name": volume_name, "mountPath": mount_dir, "readOnly": True}]
    entry = {"name": "CONFIG_FILE", "value": f"{mount_dir}/{key}"}
    return Wiring([entry], mounts, volumes, None)


def time_slicing_text(
    old_text: str | None,
    *,
    replicas: int,
    rename_by_default: bool,
    fail_requests_greater_than_one: bool,
    warnings: list[ChangeWarning],
    allocation_policy: str | None = None,
) -> str:
    """config.yaml with sharing.timeSlicing set as asked and every other key kept.

    Written through the plugin's typed model (`plugin/write.py`); what the writer replaced or
    merged becomes the change's warnings.
    """
    block = Replicated(
        rename_by_default=rename_by_default,
        fail_requests_greater_than_one=fail_requests_greater_than_one,
        resources=(SharingResource(GPU_RESOURCE, replicas),),
    )
    written = write_config(old_text, time_slicing=block, allocation_policy=allocation_policy)
    warnings.extend(ChangeWarning(note.code, dict(note.params)) for note in written.notes)
    return written.text


def wiring_of(ds: Manifest, container_name: str | None, configmap_name: str) -> Wiring:
    pod_spec = (ds.get("spec") or {}).get("template", {}).get("spec", {}) or {}
    volumes = configmap_volumes(pod_spec, configmap_name)
    names = {v["name"] for v in volumes}
    container: Manifest = next(
        (c for c in pod_spec.get("containers") or [] if c.get("name") == container_name), {}
    )
    return Wiring(
        config_file=copy.deepcopy(config_file_entries(container)),
        mounts=copy.deepcopy(
            [m for m in container.get("volumeMounts") or [] if m.get("name") in names]
        ),
        volumes=copy.deepcopy(volumes),
        config_hash=template_annotations(ds).get(CONFIG_HASH_ANNOTATION),
    )


def set_wiring(ds: Manifest, container_name: Any, wiring: Wiring, configmap_name: str) -> None:
    """Replace the config wiring of `ds` (in place) by `wiring`; touch nothing else."""
    pod_spec = ds["spec"]["template"]["spec"]
    old_names = {v["name"] for v in configmap_volumes(pod_spec, configmap_name)}
    new_names = {v["name"] for v in wiring.volumes}
    for container in pod_spec.get("containers") or []:
        if container.get("name") != container_name:
            continue
        container["env"] = _replace(
            container.get("env") or [], lambda e: e.get("name") == "CONFIG_FILE", wiring.config_file
        )
        container["volumeMounts"] = _replace(
            container.get("volumeMounts") or [],
            lambda m: m.get("name") in old_names | new_names,
            wiring.mounts,
        )
        for key in ("env", "volumeMounts"):
            if not container[key]:
                del container[key]
    pod_spec["volumes"] = _replace(
        pod_spec.get("volumes") or [], lambda v: v.get("name") in old_names, wiring.volumes
    )
    if not pod_spec["volumes"]:
        del pod_spec["volumes"]
    set_hash(ds, wiring.config_hash)


def _replace(items: list[Manifest], matches: Any, wanted: list[Manifest]) -> list[Manifest]:
    """`items` with the matching entries replaced by `wanted`, in place where names agree."""
    by_name = {w.get("name"): w for w in wanted}
    result: list[Manifest] = []
    used: set[Any] = set()
    for item in items:
        if not matches(item):
            result.append(item)
        elif item.get("name") in by_name and item.get("name") not in used:
            result.append(copy.deepcopy(by_name[item.get("name")]))
            used.add(item.get("name"))
    result.extend(copy.deepcopy(w) for w in wanted if w.get("name") not in used)
    return result


def set_hash(ds: Manifest, value: str | None) -> None:
    metadata = ds["spec"]["template"].setdefault("metadata", {})
    annotations = metadata.setdefault("annotations", {})
    if value is None:
        annotations.pop(CONFIG_HASH_ANNOTATION, None)
    else:
        annotations[CONFIG_HASH_ANNOTATION] = value
    if not annotations:
        del metadata["annotations"]
    if not metadata:
        del ds["spec"]["template"]["metadata"]


def configmap_volumes(pod_spec: Mapping[str, Any], configmap_name: str) -> list[Manifest]:
    return [
        v
        for v in pod_spec.get("volumes") or []
        if (v.get("configMap") or {}).get("name") == configmap_name
    ]


def mounted_elsewhere(
    pod_spec: Mapping[str, Any], container_name: Any, volumes: list[Manifest]
) -> tuple[set[str], set[str]]:
    """Other containers mounting these volumes, and the volumes they mount."""
    names = {v["name"] for v in volumes}
    users: set[str] = set()
    used: set[str] = set()
    for container in [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]:
        if container.get("name") == container_name:
            continue
        for mount in container.get("volumeMounts") or []:
            if mount.get("name") in names:
                users.add(str(container.get("name")))
                used.add(str(mount.get("name")))
    return users, used


def _volume(pod_spec: Mapping[str, Any], name: Any) -> Manifest:
    return next((v for v in pod_spec.get("volumes") or [] if v.get("name") == name), {})


def config_file_entries(container: Mapping[str, Any]) -> list[Manifest]:
    return [e for e in container.get("env") or [] if e.get("name") == "CONFIG_FILE"]


def template_of(ds: Manifest) -> Any:
    return (ds.get("spec") or {}).get("template")


def template_annotations(ds: Manifest) -> dict[str, str]:
    template = template_of(ds) or {}
    return dict((template.get("metadata") or {}).get("annotations") or {})
